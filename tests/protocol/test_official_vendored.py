"""The repository's copy of the official OpenWOP files: pinned by its manifest, equal to its source.

``third_party/openwop/`` is what every schema test judges by, so the suite passes on a fresh
clone with nothing beside it. ``SHA256SUMS`` pins it (an edit is caught), and where the project's
reference set ``../shared/openwop`` exists, the copy must still equal it byte for byte (a drift
on either side is caught).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

import tests.official as official

# The reference set holds these official parts (and our own SPEC_NOTES.md, which is not vendored).
VENDORED_PARTS = ("schemas", "spec", "conformance", "SOURCES.md")
# Files of ours in the copy: the attribution and the manifest.
OURS = {"README.md", official.MANIFEST}


def _files(root: Path, parts: tuple[str, ...] = VENDORED_PARTS) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for part in parts:
        path = root / part
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found.update({p.relative_to(root).as_posix(): p.read_bytes() for p in candidates})
    return found


def test_the_copy_matches_its_manifest() -> None:
    assert official.manifest_problems() == []
    listed = (official.VENDORED_DIR / official.MANIFEST).read_text(encoding="utf-8").splitlines()
    assert len(listed) == len(_files(official.VENDORED_DIR)) + 1  # every official file, plus README.md


def test_an_edited_or_unlisted_file_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "openwop"
    shutil.copytree(official.VENDORED_DIR, copy)
    target = copy / "schemas" / "v2" / "ids.schema.json"
    target.write_bytes(target.read_bytes().replace(b"nodeId", b"nodeID", 1))
    (copy / "spec" / "v2" / "extra.json").write_text("{}")
    (copy / "SOURCES.md").unlink()
    problems = official.manifest_problems(copy)
    assert any(p.startswith("schemas/v2/ids.schema.json: sha256") for p in problems), problems
    assert "spec/v2/extra.json: not in SHA256SUMS" in problems
    assert "SOURCES.md: listed in SHA256SUMS but missing" in problems


def test_the_judge_refuses_an_edited_copy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    copy = tmp_path / "openwop"
    shutil.copytree(official.VENDORED_DIR, copy)
    (copy / "schemas" / "v2" / "ids.schema.json").write_text("{}")
    monkeypatch.setattr(official, "VENDORED_DIR", copy)
    monkeypatch.delenv(official.ENV_VAR, raising=False)
    official._check_vendored_once.cache_clear()
    try:
        with pytest.raises(AssertionError, match=r"ids\.schema\.json: sha256"):
            official.official_files()
    finally:
        official._check_vendored_once.cache_clear()


def test_the_licence_and_provenance_travel_with_the_copy() -> None:
    readme = (official.VENDORED_DIR / "README.md").read_text(encoding="utf-8")
    assert "CC BY 4.0" in readme
    assert "David Tufts and openwop contributors" in readme
    assert "https://github.com/openwop/openwop" in readme
    assert "commit" in (official.VENDORED_DIR / "SOURCES.md").read_text(encoding="utf-8")


def test_the_manifest_digests_are_sha256_of_the_bytes() -> None:
    # An independent recomputation for one file, so a broken manifest reader cannot pass alone.
    name = "schemas/v2/suspend-request.schema.json"
    line = next(
        line
        for line in (official.VENDORED_DIR / official.MANIFEST).read_text(encoding="utf-8").splitlines()
        if line.endswith("  " + name)
    )
    assert line.split()[0] == hashlib.sha256((official.VENDORED_DIR / name).read_bytes()).hexdigest()


@pytest.mark.skipif(
    not official.SHARED_DIR.is_dir(),
    reason=f"no reference set at {official.SHARED_DIR} to compare with (a fresh clone has none; "
    "the in-repo copy is pinned by SHA256SUMS)",
)
def test_the_copy_equals_the_reference_set_beside_the_repository() -> None:
    ours = _files(official.VENDORED_DIR)
    theirs = _files(official.SHARED_DIR)
    assert sorted(ours.keys() - theirs.keys()) == [], "files in the copy that the reference set lacks"
    assert sorted(theirs.keys() - ours.keys()) == [], "official files not vendored: copy them in"
    drifted = sorted(name for name in ours if ours[name] != theirs[name])
    assert drifted == [], f"differ from {official.SHARED_DIR}: re-copy them and update SHA256SUMS"
    # Nothing but the official parts and our two files lives in the copy.
    top = {p.name for p in official.VENDORED_DIR.iterdir()}
    assert top == set(VENDORED_PARTS) | OURS
