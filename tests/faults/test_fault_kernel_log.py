"""The kernel log unreadable: /dev/kmsg refused (no CAP_SYSLOG), `dmesg` restricted
(`kernel.dmesg_restrict=1`), then journalctl and the log files, in that order."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.commands import printing_command
from fault_expect import (
    GPU_CHECKS,
    KERNEL_LOG_CHECKS,
    assert_complete,
    assert_faulted,
    assert_unaffected,
    assert_within,
    result,
    run_bound,
    said,
)
from fault_node import BUNDLE, FAST, NodeSpec, remove_command, run_live
from sitscheck.config import run_config
from sitscheck.models import Report, Status

RESTRICTED = "dmesg: read kernel buffer failed: Operation not permitted"


def restrict(node: NodeSpec) -> None:
    """What an unprivileged run meets where kernel.dmesg_restrict=1."""
    node.kmsg = "eperm"
    printing_command(Path(node.bin), "dmesg", "", exit_code=1, stderr=RESTRICTED)


def test_kmsg_and_dmesg_refused_falls_back_to_journalctl_saying_why(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    restrict(node)
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    assert_unaffected(report, baseline, *GPU_CHECKS, *KERNEL_LOG_CHECKS, "tensorrt")
    for name in KERNEL_LOG_CHECKS:
        log = result(report, name).facts["log"]
        assert log["source"] == "journalctl -k -b --no-pager -q"
        assert log["lines"] == result(baseline, name).facts["log"]["lines"]  # nothing lost
        note = log["note"]
        kmsg = note.index("no-such-kmsg: Operation not permitted")
        dmesg = note.index(f"`dmesg` exited 1: {RESTRICTED}")
        assert note.startswith("fell back after: ") and kmsg < dmesg  # in the order tried


def test_no_kernel_log_at_all_names_every_source_tried_in_order(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    restrict(node)
    remove_command(node, "journalctl")
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    assert_unaffected(report, baseline, *GPU_CHECKS, "tensorrt")
    for name in KERNEL_LOG_CHECKS:
        text = said(result(report, name))
        order = [
            text.index("no kernel log could be read: "),
            text.index("no-such-kmsg: Operation not permitted"),
            text.index(f"`dmesg` exited 1: {RESTRICTED}"),
            text.index("`journalctl -k -b --no-pager -q` could not run: journalctl: command not"),
            text.index("no-kern.log: No such file or directory"),
        ]
        assert order == sorted(order), text


def test_no_kernel_log_on_a_live_node_is_unknown_not_skipped(
    node: NodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live node always has a kernel log: one that cannot be read leaves Xid/AER health
    unknown (exit 3), never skipped or OK (exit 0)."""
    restrict(node)
    remove_command(node, "journalctl")
    report, _ = run_live(node, monkeypatch.setattr)
    for name in KERNEL_LOG_CHECKS:
        assert_faulted(report, name, "no kernel log could be read")


# ---- a bundle's kernel log that is there but cannot be read (issue #17) --------------------


def _replay_with_dmesg(tmp_path: Path, make: Callable[[Path], None] | None) -> Report:
    from sitscheck.app import RunRequest, execute

    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    (bundle / "dmesg.txt").unlink()
    if make is not None:
        make(bundle / "dmesg.txt")
    return execute(RunRequest(run_config({}), str(bundle)))


@pytest.mark.parametrize(
    ("make", "kind"), [(os.mkfifo, "a FIFO"), (Path.mkdir, "a folder")], ids=["fifo", "dir"]
)
def test_a_bundle_kernel_log_present_but_unreadable_is_unknown_not_skipped(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    """Before: xid SKIPPED "no kernel log" (exit 0 on that alone) for a dmesg.txt it refused."""
    report = _replay_with_dmesg(tmp_path, make)
    for name in ("xid", "pcie_aer"):
        check = result(report, name)
        assert check.status != Status.SKIPPED, (name, said(check))
        assert f"dmesg.txt could not be read: not a regular file ({kind})" in said(check), name
    assert result(report, "xid").status == Status.UNKNOWN


def test_a_bundle_without_a_kernel_log_still_skips_xid(tmp_path: Path) -> None:
    xid = result(_replay_with_dmesg(tmp_path, None), "xid")
    assert xid.status == Status.SKIPPED
    assert "dmesg.txt is not in the bundle" in (xid.skip_reason or "")
