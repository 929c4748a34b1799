"""The documentation site builds with ``mkdocs build --strict`` (the ``docs`` extra): a page left
out of the nav, a broken link between pages, or a docstring the API reference cannot render fails
it. The build goes to a temporary folder, never to ``site/`` in the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a build of the whole site, API reference included: about 10 s
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    assert {"index.html", "agent-developers/index.html", "server/index.html", "reference/index.html"} <= pages
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    # The API reference is generated from the docstrings, not written by hand.
    assert "pending_interrupts" in reference and "Wait for the run to complete and return its" in reference
    # Sphinx roles shown as code (scripts/docs_roles.py), not verbatim.
    assert ":meth:" not in reference and ":class:" not in reference
    # The home page shows the README's quickstart (one copy, taken between its snippet markers).
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "my_graph:workflows" in home and "--8&lt;--" not in home and "--8<--" not in home
    conformance = (site / "conformance" / "index.html").read_text(encoding="utf-8")
    assert "conformance-noop" in conformance
