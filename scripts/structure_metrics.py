"""Structure numbers of the package, repeatable before and after a refactoring (issue 37).

Static (ast over ``src/wop_langgraph``, no import):

* lines of ``host/`` and ``store/`` (physical lines of their ``.py`` files) and of the whole
  package; the largest module;
* per table (every module-level name ending in ``_table`` defined in ``store/`` or ``notify/``),
  the modules outside its defining module that name it;
* functions in ``host/`` (and the other packages outside ``store/``) that build SQL: a function
  whose own body (nested functions counted apart) names something imported from
  ``sqlalchemy`` or a ``*_table``; their count and their lines (outermost such functions).

Dynamic (``--walk``): one resolve (``host.resolve(..., wait=False)``) and one worker pass
(``host.run_until_idle()``) of a 3-node approval graph on a fresh SQLite file, traced with
``sys.setprofile``. Only frames of ``wop_langgraph`` count; the walk is the sequence of
modules control moves through. A *stop* is a function of ours entered from another module of
ours (the nearest frame of ours below it); a *return* is control moving (by a call or a
return) into a module of ours it had already left once in this walk. Printed: distinct stops
(and all stop calls), returns, and the modules visited.

    PYTHONPATH=src python scripts/structure_metrics.py --walk
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1] / "src" / "wop_langgraph"


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(ROOT.parent).with_suffix("").parts): path
        for path in sorted(ROOT.rglob("*.py"))
    }


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def static() -> None:
    modules = _modules()
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items()}
    for package in ("host", "store"):
        total = sum(_lines(p) for n, p in modules.items() if n.split(".")[1] == package)
        print(f"lines {package}/: {total}")
    print(f"lines package: {sum(_lines(p) for p in modules.values())}")
    largest = max(modules, key=lambda n: _lines(modules[n]))
    print(f"largest module: {largest} ({_lines(modules[largest])} lines)")

    tables: dict[str, str] = {}
    for name, tree in trees.items():
        for node in tree.body:
            targets = [t for t in getattr(node, "targets", [getattr(node, "target", None)]) if t is not None]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.endswith("_table") and target.id != "_table":
                    tables.setdefault(target.id, name)
    users: dict[str, set[str]] = defaultdict(set)
    for name, tree in trees.items():
        named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        named |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        for table, home in tables.items():
            if table in named and name != home:
                users[table].add(name)
    print("modules naming each table (besides its own):")
    for table in sorted(tables, key=lambda t: -len(users[t])):
        packages = sorted({m.split(".")[1] for m in users[table]})
        print(f"  {table}: {len(users[table])} modules in {len(packages)} packages {packages}")

    for scope in ("host", "outside store"):
        count = lines = 0
        for name, tree in trees.items():
            package = name.split(".")[1] if name.count(".") else ""
            if (scope == "host" and package != "host") or (scope != "host" and package == "store"):
                continue
            sql_names = {
                a.asname or a.name
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("sqlalchemy")
                for a in n.names
                if n.module != "sqlalchemy.exc" and a.name not in _NOT_BUILDING
            } | {
                a.asname or a.name.split(".")[0]
                for n in ast.walk(tree)
                if isinstance(n, ast.Import)
                for a in n.names
                if a.name.startswith("sqlalchemy")
            }
            c, n_lines = _sql_functions(tree, sql_names)
            count += c
            lines += n_lines
        print(f"functions building SQL in {scope}: {count} ({lines} lines)")


#: Names from SQLAlchemy that run or type statements rather than build them.
_NOT_BUILDING = frozenset(
    {"Connection", "Engine", "AsyncConnection", "AsyncEngine", "Row", "RowMapping", "Result", "CursorResult"}
)


def _sql_functions(tree: ast.AST, sql_names: set[str]) -> tuple[int, int]:
    """(functions whose own body names SQL, lines of the outermost such functions)."""
    count = 0
    lines = 0

    def own_names(func: ast.AST) -> set[str]:
        found: set[str] = set()
        stack: list[ast.AST] = list(getattr(func, "body", []))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.AnnAssign):  # only the value: annotations build nothing
                stack.extend(n for n in (node.target, node.value) if n is not None)
                continue
            if isinstance(node, ast.Name):
                found.add(node.id)
            stack.extend(ast.iter_child_nodes(node))
        return found

    def visit(node: ast.AST, inside: bool) -> None:
        nonlocal count, lines
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = own_names(child)
                builds = bool(names & sql_names) or any(n.endswith("_table") and n != "_table" for n in names)
                if builds:
                    count += 1
                    if not inside:
                        lines += (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, inside or builds)
            else:
                visit(child, inside)

    visit(tree, False)
    return count, lines


def walk() -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from wop_langgraph import WopHost, request_approval
    from wop_langgraph.host import Principal

    class State(TypedDict, total=False):
        value: int
        approved: bool

    def prepare(state: State) -> State:
        return {"value": 1}

    def approve(state: State) -> State:
        decision = request_approval("doc-1", "document", "ok?")
        return {"approved": decision.action == "approve"}

    def finish(state: State) -> State:
        return {"value": state.get("value", 0) + 1}

    builder = StateGraph(State)
    builder.add_node("prepare", prepare)
    builder.add_node("approve", approve)
    builder.add_node("finish", finish)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "approve")
    builder.add_edge("approve", "finish")
    builder.add_edge("finish", END)

    with tempfile.TemporaryDirectory() as tmp:
        host = WopHost.from_url(f"sqlite:///{tmp}/walk.db")
        host.register("wf", builder.compile())
        alice = Principal("acme", "alice", frozenset({"approvals:respond", "runs:create"}))
        for warm in (True, False):
            run_id = host.create_run("wf", {}, owner=alice)["runId"]
            pending = host.pending_interrupts(run_id)[0]
            resolving = functools.partial(
                host.resolve, run_id, pending.node_id, {"action": "accept"}, alice, wait=False
            )
            resolve = _trace(resolving)
            worker = _trace(host.run_until_idle)
            if not warm:
                _report("resolve", resolve)
                _report("worker pass", worker)
            assert host.snapshot(run_id)["status"] == "completed", host.snapshot(run_id)["status"]
        host.close()
        host.saver.close()


def _ours(frame: Any) -> str | None:
    name = frame.f_globals.get("__name__", "")
    return name if name.startswith("wop_langgraph") else None


def _trace(action: Any) -> dict[str, Counter[str]]:
    stops: Counter[str] = Counter()
    returns: Counter[str] = Counter()
    visited: set[str] = set()  # modules control has left at least once

    def nearest_ours(frame: Any) -> str | None:
        while frame is not None:
            found = _ours(frame)
            if found:
                return found
            frame = frame.f_back
        return None

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        module = _ours(frame)
        if module is None:
            return
        other = nearest_ours(frame.f_back)
        if other is None or other == module:
            return
        into = module if event == "call" else other
        if event == "call":
            stops[f"{module}:{frame.f_code.co_qualname}"] += 1
        if into in visited:
            returns[into] += 1
        visited.add(module if event == "return" else other)

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return {"stops": stops, "returns": returns}


def _report(what: str, counts: dict[str, Counter[str]]) -> None:
    stops, returns = counts["stops"], counts["returns"]
    print(
        f"walk of one {what}: {len(stops)} stops ({sum(stops.values())} calls across modules), "
        f"{sum(returns.values())} returns (into {len(returns)} modules), "
        f"{len({s.split(':')[0] for s in stops})} modules"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walk", action="store_true", help="also trace one resolve and one worker pass")
    args = parser.parse_args()
    static()
    if args.walk:
        walk()


if __name__ == "__main__":
    main()
