"""A bundle reads the same whatever path names it (issue 29, item 6).

Every bundle of tests/bundles (the recorded nodes, the fault bundles, each scenario
materialised) is replayed by its real path, by a relative path (with `..` in it), through a
symlink to it, and as a .tar.gz unpacked under a TMPDIR that is itself a symlink: the four
reports are the same, less the timings and the name the bundle was given. Before the fix a
bundle with TensorRT logs named any way but its real path had its tensorrt check UNKNOWN
(`ValueError: '/…/tensorrt/x.log' is not in the subpath of 'b/trt'`).
"""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from bundle_cases import CASES, bundle_folder, materialise
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig


def _report(location: str) -> dict[str, Any]:
    """The replay's report as JSON, less its timings, with the bundle's name as `<bundle>`."""
    report = execute(RunRequest(RunConfig(), location))
    text = json.dumps(msgspec.to_builtins(report), sort_keys=True)
    data: dict[str, Any] = json.loads(text.replace(json.dumps(location)[1:-1], "<bundle>"))
    data.pop("started_at")
    data.pop("duration_s")
    for check in data["checks"]:
        check.pop("duration_s", None)
    return data


def _tarball(bundle: Path, archive: Path) -> Path:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle, arcname="bundle")
    return archive


# One bundle of each shape in the fast suite (NVML, sysfs and the kernel log; a bandwidth
# record; TensorRT logs in a materialised scenario); every other bundle in the slow one.
SHAPES = ("h200x2-idle-v0", "h200x1-bandwidth-v1", "scenarios/seed-worked-example")


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=() if c in SHAPES else pytest.mark.slow) for c in CASES]
)
def test_a_bundle_named_any_way_gives_the_same_report(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = bundle_folder(case, tmp_path)
    expected = _report(str(bundle))
    work = tmp_path / "work" / "deeper"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    relative = os.path.relpath(bundle, work)  # climbs with `..`
    assert not Path(relative).is_absolute() and ".." in Path(relative).parts
    link = work / "sitscheck-link-to-the-bundle"
    link.symlink_to(bundle, target_is_directory=True)
    real_tmp = tmp_path / "real-tmp"
    real_tmp.mkdir()
    linked_tmp = tmp_path / "linked-tmp"
    linked_tmp.symlink_to(real_tmp, target_is_directory=True)
    archive = _tarball(bundle, tmp_path / "bundle.tar.gz")
    assert _report(relative) == expected
    assert _report("sitscheck-link-to-the-bundle") == expected
    assert _report(str(link)) == expected
    monkeypatch.setattr(tempfile, "tempdir", str(linked_tmp))
    assert _report(str(archive)) == expected
    assert list(real_tmp.iterdir()) == []  # the unpacked copy was removed


def test_the_tensorrt_logs_are_read_through_every_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case the issue reported: the worked example's TensorRT log, read (not UNKNOWN)."""
    bundle = materialise("seed-worked-example", tmp_path / "b" / "trt")
    monkeypatch.chdir(tmp_path)
    report = execute(RunRequest(RunConfig(checks=["tensorrt"]), "b/trt"))
    check = report.check("tensorrt")
    assert check is not None and check.error is None
    assert [log["file"] for log in check.facts["logs"]] == [
        f"tensorrt/{path.name}" for path in sorted((bundle / "tensorrt").iterdir())
    ]
