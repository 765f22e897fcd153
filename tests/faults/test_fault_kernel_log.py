"""The kernel log unreadable: /dev/kmsg refused (no CAP_SYSLOG), `dmesg` restricted
(`kernel.dmesg_restrict=1`), then journalctl and the log files, in that order."""

from __future__ import annotations

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
    said,
)
from fault_node import NodeSpec, remove_command, run_live
from sitscheck.models import Report

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

    assert_within(elapsed, 2.0)
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

    assert_within(elapsed, 2.0)
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
