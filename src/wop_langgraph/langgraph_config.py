"""A LangGraph project's ``langgraph.json``, loaded as ``langgraph dev`` loads it (``serve --config``)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from wop_langgraph.startup import StartupError

__all__ = ["load_langgraph_config"]


def load_langgraph_config(
    path: str | os.PathLike[str], command: str = "serve"
) -> dict[str, Pregel[Any, Any, Any, Any]]:
    """The graphs of a LangGraph project's ``langgraph.json``, as ``langgraph dev`` loads them.

    ``graphs`` maps each name (the workflow id) to ``"./file.py:attr"`` (relative to the file) or
    ``"package.module:attr"``; ``attr`` is a compiled graph, a ``StateGraph`` (compiled here) or
    a function without arguments returning one. ``env`` (an object, or the path of a ``.env``
    file) is put in the environment first, without overriding what is already set, so a graph
    that reads it at import sees it. The file's folder goes on ``sys.path`` (``dependencies:
    ["."]``). Other keys (``dependencies``, ``python_version``, ``dockerfile_lines``, ...) are
    about building images and are ignored.

    Raises:
        StartupError: an unreadable or malformed file, a graph that cannot be loaded (one line
            naming what to fix).
    """
    config_path = Path(path).resolve()
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StartupError(f"{command}: cannot read {str(path)!r}: {exc}") from None
    graphs = config.get("graphs") if isinstance(config, dict) else None
    if not isinstance(graphs, dict) or not graphs:
        raise StartupError(f'{command}: {str(path)!r} has no "graphs" object')
    root = config_path.parent
    _load_env(config.get("env"), root, command)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return {str(name): _load_graph(str(name), spec, root, command) for name, spec in graphs.items()}


def _load_env(env: Any, root: Path, command: str) -> None:
    if env is None:
        return
    if isinstance(env, str):
        try:
            lines = (root / env).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise StartupError(f"{command}: cannot read the env file {env!r}: {exc}") from None
        pairs: dict[str, Any] = {}
        for line in lines:
            text = line.strip()
            if not text or text.startswith("#") or "=" not in text:
                continue
            key, _, value = text.removeprefix("export ").partition("=")
            pairs[key.strip()] = value.strip().strip("'\"")
        env = pairs
    if not isinstance(env, dict):
        raise StartupError(f'{command}: "env" must be an object or the path of a .env file')
    for key, value in env.items():
        os.environ.setdefault(str(key), str(value))


def _load_graph(name: str, spec: Any, root: Path, command: str) -> Pregel[Any, Any, Any, Any]:
    if isinstance(spec, dict):
        spec = spec.get("path")
    location, sep, attr = str(spec).rpartition(":")
    if not sep or not location or not attr:
        raise StartupError(f'{command}: graph {name!r}: expected "./file.py:attr", got {spec!r}')
    try:
        if location.endswith(".py") or "/" in location:
            file = (root / location).resolve()
            module_spec = importlib.util.spec_from_file_location(f"__wop_langgraph_graph_{name}__", file)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot load {str(file)!r}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_spec.name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(location)
    except (ImportError, OSError) as exc:
        raise StartupError(f"{command}: graph {name!r}: cannot import {location!r}: {exc}") from None
    value = getattr(module, attr, None)
    if callable(value) and not isinstance(value, (Pregel, StateGraph)):
        value = value()
    if isinstance(value, StateGraph):
        value = value.compile()
    if not isinstance(value, Pregel):
        raise StartupError(f"{command}: graph {name!r}: {spec!r} is not a graph")
    return value
