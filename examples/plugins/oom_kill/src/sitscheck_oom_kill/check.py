"""The `oom_kill` check's declarations: all the rest of sitscheck knows about it.

Registered through the entry point `oom_kill = "sitscheck_oom_kill.check:OomKillCheck"`
(group `sitscheck.checks`). This module imports only `sitscheck.contract`: listing checks and
starting up import none of the check's work (`impl`, loaded when the check runs).
"""

from __future__ import annotations

from sitscheck.contract import (
    Anchor,
    EvidenceSpec,
    KernelLogInterest,
    Layer,
    LazyCheck,
    MetricKind,
    MetricSpec,
)


class OomKillCheck(LazyCheck):
    name = "oom_kill"
    summary = "processes killed by the kernel's OOM killer (kernel log), their memory and cgroup"
    layer = Layer.RUNTIME
    needs_gpu = False
    metrics = (
        MetricSpec(
            "sitscheck.oom_kill.kills",
            "{kill}",
            "OOM kills in the kernel log read (ignored processes excluded)",
            MetricKind.EVENT,
        ),
        MetricSpec(
            "sitscheck.oom_kill.process_kills",
            "{kill}",
            "OOM kills by process name and scope (memcg, system, cpuset, mempolicy)",
            MetricKind.EVENT,
        ),
    )
    codes = "sitscheck_oom_kill.codes:CODES"
    facts = "sitscheck_oom_kill.facts:OomKillFacts"
    config = "sitscheck_oom_kill.facts:OomKillSettings"
    evidence = EvidenceSpec(
        summary="kernel log (/dev/kmsg, dmesg, journalctl -k or a file): the OOM killer's reports",
        kernel_log=True,
    )
    # The lines the handler reads: the kill ("Killed process N (name) ..."), the process
    # chosen before 5.1 ("Kill process N (name) score S or sacrifice child"), the summary
    # ("oom-kill:constraint=..."), the reaper's, and the first line of each report.
    kernel_log = KernelLogInterest(
        anchors=(
            Anchor(b"Killed process "),
            Anchor(b"Kill process "),
            Anchor(b"oom-kill:"),
            Anchor(b"oom_reaper: reaped process "),
            Anchor(b" invoked oom-killer:"),
        ),
        handler="sitscheck_oom_kill.parse:OomKillLines",
    )
    impl = "sitscheck_oom_kill.impl:OomKillImpl"
