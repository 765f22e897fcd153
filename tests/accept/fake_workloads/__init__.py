"""Stand-in acceptance workloads for the parent's tests (no GPU): see `behave`."""

from __future__ import annotations

from pathlib import Path

import pytest

MODULE = "fake_workloads.behave"
MARKS_VARIABLE = "SITSCHECK_FAKE_MARKS"  # SITSCHECK_* variables reach a child interpreter


def prepare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make `MODULE` importable by the children (a child gets the parent's absolute sys.path,
    `child_python`) and give them a folder for their marker files; returns the folder."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))
    folder = tmp_path / "marks"
    folder.mkdir()
    monkeypatch.setenv(MARKS_VARIABLE, str(folder))
    return folder
