"""The notebooks under ``notebooks/`` run top to bottom without an error, each in under 60 s.

How the kernel is chosen: the test writes a kernelspec named ``python3`` into a temporary folder,
its ``argv`` starting with ``sys.executable`` (the interpreter running pytest, i.e. the project's
virtualenv), and hands nbclient a ``KernelManager`` whose ``KernelSpecManager`` looks only in that
folder. So a ``python3`` kernelspec installed elsewhere on the machine (``~/.local/share/jupyter``,
``/usr/share/jupyter``) can never shadow it, and nothing is installed into the user's Jupyter
paths. The notebooks ask for ``python3`` in their metadata; the last cell appended by the test
prints the kernel's ``sys.executable`` to prove it is the same interpreter.

The execution tests are ``slow`` and need the ``notebooks`` extra (nbclient, ipykernel,
matplotlib, tqdm); without it they skip. The check that committed notebooks carry no outputs
only needs ``json`` and always runs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
EXPECTED = {"chat_conversation.ipynb", "escalation_thresholds.ipynb", "human_review.ipynb"}
TIME_LIMIT_S = 60.0
KERNEL_NAME = "python3"


def test_the_three_notebooks_are_there() -> None:
    assert {p.name for p in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert notebook["metadata"]["kernelspec"]["name"] == KERNEL_NAME
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("outputs") == [], f"cell {index} of {path.name} has outputs: strip them"
        assert cell.get("execution_count") is None, f"cell {index} of {path.name} has an execution count"
    assert "widgets" not in notebook["metadata"], f"{path.name} carries widget state"


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding one kernelspec, ``python3``, that runs this very interpreter."""
    pytest.importorskip("ipykernel", reason="the notebooks extra is not installed")
    folder = tmp_path_factory.mktemp("kernels")
    spec = folder / KERNEL_NAME
    spec.mkdir()
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (wop-langgraph tests)",
                "language": "python",
                "metadata": {"debugger": False},
            }
        ),
        encoding="utf-8",
    )
    return folder


def _execute(path: Path, kernel_dir: Path, workdir: Path) -> tuple[Any, float]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient", reason="the notebooks extra is not installed")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    manager = AsyncKernelManager(
        kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)])
    )
    client = nbclient.NotebookClient(
        notebook,
        km=manager,
        timeout=int(TIME_LIMIT_S),
        resources={"metadata": {"path": str(workdir)}},
    )
    started = time.perf_counter()
    # nbclient shuts a kernel down only when it created the manager itself; ours is passed in,
    # so ask for the clean-up explicitly (else zmq sockets leak: ResourceWarning -> error).
    client.execute(cleanup_kc=True)  # raises CellExecutionError on the first failing cell
    return notebook, time.perf_counter() - started


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_without_errors(path: Path, kernel_dir: Path, tmp_path: Path) -> None:
    notebook, elapsed = _execute(path, kernel_dir, tmp_path)
    assert elapsed < TIME_LIMIT_S, f"{path.name} took {elapsed:.1f} s"
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", output
    (probe,) = notebook.cells[-1].outputs
    assert Path(probe["text"].strip()) == Path(sys.executable)
