"""The package's import graph, read with ``ast`` over ``src/`` (nothing is imported).

* no cycle between the packages of ``wop_langgraph`` (every import counts: module level,
  inside a function, or under ``TYPE_CHECKING``);
* only ``store/`` imports SQLAlchemy, and only ``store/`` names a table (``*_table``);
* no module imports another package's private module (``pkg/_name.py``); the root package's
  own ``wop_langgraph._name`` helpers are shared by all.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "wop_langgraph"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    package: str | None  # its package under wop_langgraph (None: a root module)
    target: str  # the imported module, dotted
    names: tuple[str, ...]  # the names imported from it (``from x import a, b``)
    line: int


def _imports() -> Iterator[Import]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = parts[1] if len(parts) > 2 else None
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(module, package, alias.name, (), node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against the importing module's package
                    base = module.split(".")
                    base = base[: len(base) - node.level + (1 if parts[-1] == "__init__" else 0)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                yield Import(module, package, target, tuple(a.name for a in node.names), node.lineno)


IMPORTS = list(_imports())
PACKAGES = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _package_of(target: str) -> str | None:
    parts = target.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "wop_langgraph" and parts[1] in PACKAGES else None


def test_the_graph_is_read() -> None:
    """The reader sees the imports this test is about (a broken reader would pass everything)."""
    assert len(IMPORTS) > 500
    assert {"host", "store", "protocol", "server", "notify", "definitions"} <= PACKAGES
    assert any(i.package == "store" and i.target.startswith("sqlalchemy") for i in IMPORTS)
    assert any(i.package == "host" and _package_of(i.target) == "store" for i in IMPORTS)


def test_no_package_cycles() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], str] = {}
    for i in IMPORTS:
        target = _package_of(i.target)
        if i.package is not None and target is not None and target != i.package:
            edges[i.package].add(target)
            where.setdefault((i.package, target), f"{i.module}:{i.line}")
    cycles = []
    for start in sorted(edges):
        # Depth-first from each package: a path back to it is a cycle.
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in path and nxt > start:  # each cycle once, from its smallest package
                    stack.append((nxt, [*path, nxt]))
    details = {f"{a}->{b}": w for (a, b), w in where.items()}
    assert not cycles, f"package cycles: {cycles}; first import of each edge: {details}"


def test_only_the_store_imports_sqlalchemy() -> None:
    outside = [
        f"{i.module}:{i.line} imports {i.target}"
        for i in IMPORTS
        if i.target.split(".")[0] == "sqlalchemy" and i.package != "store"
    ]
    assert not outside, "\n".join(outside)


def test_only_the_store_names_tables() -> None:
    outside = [
        f"{i.module}:{i.line} imports {name} from {i.target}"
        for i in IMPORTS
        if i.package != "store"
        for name in i.names
        if name.endswith("_table")
    ]
    assert not outside, "\n".join(outside)


def test_no_reach_into_another_package_private_module() -> None:
    reaches = []
    for i in IMPORTS:
        target = _package_of(i.target)
        if target is None or target == i.package:
            continue
        parts = i.target.split(".")[2:]
        # ``from wop_langgraph.pkg import _mod`` reaches into a private module too.
        named = [n for n in i.names if (ROOT / target / f"{n}.py").exists()]
        if any(p.startswith("_") for p in parts) or any(n.startswith("_") for n in named):
            reaches.append(f"{i.module}:{i.line} imports {i.target} {list(i.names)}")
    assert not reaches, "\n".join(reaches)


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("from sqlalchemy import select\n", test_only_the_store_imports_sqlalchemy),
        ("from wop_langgraph.store.run_tables import runs_table\n", test_only_the_store_names_tables),
        (
            "from wop_langgraph.store._saver_sql import Sql\n",
            test_no_reach_into_another_package_private_module,
        ),
        ("from wop_langgraph.server.app import create_app\n", test_no_package_cycles),
    ],
)
def test_each_rule_catches_its_breach(source: str, rule: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host module with the forbidden import fails the rule (server imports host already)."""
    tree = ast.parse(source)
    node = tree.body[0]
    assert isinstance(node, ast.ImportFrom)
    breach = Import(
        "wop_langgraph.host.example", "host", node.module or "", tuple(a.name for a in node.names), 1
    )
    monkeypatch.setattr(sys.modules[__name__], "IMPORTS", [*IMPORTS, breach])
    with pytest.raises(AssertionError):
        rule()  # type: ignore[operator]
