"""The oom_kill check's finding codes: written once, read by findings and `sitscheck explain`."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

PROCESS_KILLED = "oom_kill.process_killed"

CODES = Codes(
    [
        CodeSpec(
            code=PROCESS_KILLED,
            severity=Severity.WARNING,
            meaning=(
                "the kernel's OOM killer killed a process to free memory: the node ran out, or "
                "the memory cgroup the message names (a container's limit) reached its limit; "
                "the memory given is the process's anon-rss when it was killed"
            ),
            action=(
                "find what grew (the process's host memory: weights, KV cache, pinned buffers, "
                "data-loader workers) and raise the cgroup limit the message names or lower the "
                "workload's memory; restart the service if its supervisor did not"
            ),
            kind=FindingKind.EVENT,
            category=ActionCategory.TRIAGE,
            name="process killed by the OOM killer",
        ),
    ]
)
