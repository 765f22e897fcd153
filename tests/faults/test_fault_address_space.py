"""The installed CLI under an address-space limit (`ulimit -v`, issue 29, item 9).

Before: under `ulimit -v 1000000` a replay of a 47 KB bundle lost three checks to MemoryError
(each file read allocated its 64 MiB cap) or died with `can't start new thread` and no report
(malloc's arenas, 64 MiB reserved per thread, left no room for the next thread's stack).
Now every bundle of tests/bundles replays under that limit with the same status, check by
check, as without; under a limit too small for every thread the report is still written and
every check that differs says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from address_limit import run_limited
from bundle_cases import CASES, bundle_folder
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig

EXIT = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}
REFUSALS = ("could not start a thread", "MemoryError", "cannot allocate memory")


def cli(
    bundle: Path, limit_kib: int, out: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`sitscheck run --from BUNDLE -o json=OUT`, as installed, under `ulimit -v LIMIT_KIB`."""
    script = Path(sys.executable).with_name("sitscheck")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "sitscheck"]
    return run_limited([*argv, "run", "--from", str(bundle), "-o", f"json={out}"], limit_kib, env)


def unlimited(bundle: Path) -> dict[str, Any]:
    """The statuses of the same replay with no limit (in this process)."""
    report = execute(RunRequest(RunConfig(), str(bundle)))
    return {
        "status": report.status.value,
        "checks": {c.name: c.status.value for c in report.checks},
    }


def limited_report(done: subprocess.CompletedProcess[str], out: Path) -> dict[str, Any]:
    assert out.is_file(), done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    assert done.returncode == EXIT[report["status"]], done.stderr
    assert "internal error" not in done.stderr, done.stderr
    return report


@pytest.mark.parametrize("case", CASES)
def test_every_bundle_replays_the_same_under_ulimit_v_1000000(case: str, tmp_path: Path) -> None:
    bundle = bundle_folder(case, tmp_path)
    out = tmp_path / "report.json"
    report = limited_report(cli(bundle, 1_000_000, out), out)
    checks = {c["name"]: c["status"] for c in report["checks"]}
    assert {"status": report["status"], "checks": checks} == unlimited(bundle), [
        (c["name"], c.get("error")) for c in report["checks"] if c.get("error")
    ]


def test_ulimit_v_600000_gives_the_same_report(tmp_path: Path) -> None:
    """The case the issue reported dying with `can't start new thread` and no report."""
    bundle = bundle_folder("h200x2-idle-v1", tmp_path)
    out = tmp_path / "report.json"
    report = limited_report(cli(bundle, 600_000, out), out)
    checks = {c["name"]: c["status"] for c in report["checks"]}
    assert {"status": report["status"], "checks": checks} == unlimited(bundle)


def test_with_too_little_address_space_for_every_thread_the_report_says_why(
    tmp_path: Path,
) -> None:
    """The operator's own MALLOC_ARENA_MAX (kept) leaves too little under 400000 KiB for every
    thread: the report is still written, and each check that differs from the run without a
    limit is UNKNOWN naming the refusal; exit 3 when any does."""
    bundle = bundle_folder("h200x2-idle-v1", tmp_path)
    out = tmp_path / "report.json"
    done = cli(bundle, 400_000, out, {"MALLOC_ARENA_MAX": "16"})
    report = limited_report(done, out)
    expected = unlimited(bundle)["checks"]
    differ = [c for c in report["checks"] if c["status"] != expected[c["name"]]]
    for check in differ:
        assert check["status"] == "unknown", check
        assert any(why in (check.get("error") or "") for why in REFUSALS), check
    assert report["status"] == ("unknown" if differ else "ok")
