"""The real CLI, in a child process: a missing extra is one line and exit 2; every --help is plain.

Extras are made missing by ``tests/cli/blocked/sitecustomize.py`` (put first on the child's
``PYTHONPATH``), which refuses to import the named modules as if they were not installed.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.cli._support import BLOCKER, REPO, _console_script, _run
from wop_langgraph._extras import EXTRAS

pytestmark = pytest.mark.slow

SPHINX = re.compile(r":(class|func|mod|meth|attr|data|exc|obj):|``")


def _assert_one_line_naming(proc: subprocess.CompletedProcess[str], extra: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"'{extra}' extra" in lines[0]
    assert f'pip install "wop-langgraph[{extra}]"' in lines[0]


def test_the_blocker_really_blocks() -> None:
    code = "import sitecustomize; print(sitecustomize.__file__); import fastapi"
    proc = _run([sys.executable, "-c", code], block="fastapi")
    assert proc.returncode == 1
    assert proc.stdout.strip() == str(BLOCKER / "sitecustomize.py")
    assert "No module named 'fastapi'" in proc.stderr


@pytest.mark.parametrize("module", ["fastapi", "uvicorn"])
def test_serve_without_the_server_extra_names_it(module: str) -> None:
    proc = _run([*_console_script(), "serve", "wop_langgraph.examples.review:workflows"], block=module)
    _assert_one_line_naming(proc, "server")
    assert module in proc.stderr


def test_serve_on_postgresql_without_psycopg_names_the_postgres_extra() -> None:
    # The URL comes from WOP_DATABASE_URL here; --db goes through the same Settings field.
    argv = [*_console_script(), "serve", "wop_langgraph.examples.review:workflows"]
    proc = _run(["env", "WOP_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/wop", *argv], block="psycopg")
    _assert_one_line_naming(proc, "postgres")


@pytest.mark.parametrize("module", ["psycopg", "psycopg_pool"])
def test_a_worker_on_postgresql_without_the_postgres_extra_names_it(module: str) -> None:
    argv = [*_console_script(), "worker", "wop_langgraph.examples.review:workflows"]
    proc = _run([*argv, "--db", "postgresql://postgres@127.0.0.1:5432/wop"], block=module)
    _assert_one_line_naming(proc, "postgres")
    assert module in proc.stderr


def test_each_extra_in_pyproject_brings_the_modules_its_commands_check_for() -> None:
    """``_extras.EXTRAS`` (what the one-line message checks) agrees with ``pyproject.toml``."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    providers = importlib.metadata.packages_distributions()

    def distributions(extra: str) -> set[str]:
        found: set[str] = set()
        for line in extras[extra]:
            requirement = Requirement(line)
            if requirement.name == "wop-langgraph":  # a self-reference: chat brings [server]
                for other in requirement.extras:
                    found |= distributions(other)
            else:
                found.add(_canonical(requirement.name))
                found |= _brought_by_its_extras(requirement)
        return found

    for extra, modules in EXTRAS.items():
        assert extra in extras, f"the '{extra}' extra named by the CLI is not in pyproject.toml"
        brought = distributions(extra)
        for module in modules:
            owners = {_canonical(d) for d in providers.get(module, [])}
            assert owners & brought, f"'{extra}' does not bring {module} (provided by {owners})"
    assert set(EXTRAS) | {"notebooks", "adapters", "notify"} <= set(extras)
    assert {"jupyterlab", "nbconvert"} <= distributions("notebooks")
    dev = distributions("dev")
    # "reference" (langgraph dev, for a benchmark) pins jsonschema-rs below what dev's schemathesis
    # needs: no install has both, so dev brings every other extra.
    assert all(distributions(extra) <= dev for extra in extras if extra not in ("dev", "reference")), (
        "dev brings every extra"
    )
    assert "langgraph-cli" in distributions("reference") and "langgraph-cli" in dev


def _brought_by_its_extras(requirement: Requirement) -> set[str]:
    """The distributions an installed package requires for the extras asked of it (psycopg[pool])."""
    found: set[str] = set()
    for line in importlib.metadata.requires(requirement.name) or []:
        inner = Requirement(line)
        if inner.marker and any(inner.marker.evaluate({"extra": e}) for e in requirement.extras):
            found.add(_canonical(inner.name))
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_serve_on_sqlite_does_not_need_psycopg(tmp_path: Path) -> None:
    # With psycopg blocked, SQLite still gets past the extras to the next check (signing keys).
    proc = _run(
        [*_console_script(), "serve", "wop_langgraph.examples.review:workflows", "--db", "sqlite:///x.db"],
        block="psycopg",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "extra" not in proc.stderr
    assert "WOP_SIGNING_KEYS" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_chat_app_without_openwop_client_names_the_chat_extra() -> None:
    proc = _run(
        [sys.executable, "-m", "wop_langgraph.examples.chat_app", "--api-key", "k"], block="openwop_client"
    )
    _assert_one_line_naming(proc, "chat")


def test_every_help_is_plain_text_and_the_two_servers_default_to_different_ports() -> None:
    top = _run([*_console_script(), "--help"])
    assert top.returncode == 0, top.stderr
    choices = re.search(r"\{([a-z,-]+)\}", top.stdout)
    assert choices, top.stdout
    commands = {name: [*_console_script(), name, "--help"] for name in choices.group(1).split(",")}
    commands["chat_app"] = [sys.executable, "-m", "wop_langgraph.examples.chat_app", "--help"]
    assert {"demo", "serve", "chat_app"} <= commands.keys()
    helps = {"top": top.stdout}
    for name, argv in commands.items():
        # `serve --help` must work before the server extra is installed.
        proc = _run(argv, block="fastapi,uvicorn,pydantic_settings" if name == "serve" else "")
        assert proc.returncode == 0, (argv, proc.stderr)
        helps[name] = proc.stdout
    for name, text in helps.items():
        assert text.startswith("usage:"), name
        assert not SPHINX.search(text), (name, SPHINX.search(text))
    assert "'server' extra" in helps["serve"]
    serve_port = re.search(r"--port PORT\s+port \(default (\d+)\)", helps["serve"])
    chat_port = re.search(r"default http://127\.0\.0\.1:(\d+)", helps["chat_app"])
    assert serve_port and chat_port, (helps["serve"], helps["chat_app"])
    assert serve_port.group(1) == "8000"
    assert chat_port.group(1) != serve_port.group(1)
