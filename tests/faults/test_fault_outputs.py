"""A report destination that cannot be written (read-only or full folder) at the end of a run."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from fault_node import BUNDLE, Invoked, invoke, refuse_writes


def run_to(target: Path) -> Invoked:
    return invoke("run", "--from", str(BUNDLE), "-o", f"json={target}", "-o", "text")


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    refuse_writes(monkeypatch.setattr, folder, errno.EROFS, new_only=False)
    return folder / "report.json"


def test_unwritable_report_file_is_unknown_and_never_a_traceback(target: Path) -> None:
    done = run_to(target)
    assert done.code == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "Read-only file system" in done.stderr
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temporary left behind
    assert done.elapsed < 10.0


def test_unwritable_report_file_still_delivers_the_other_outputs(target: Path) -> None:
    done = run_to(target)
    assert "driver" in done.stdout  # the text report, after the json one that failed
    assert "internal error" not in done.stderr
    assert str(target) in done.stderr
