"""Pure: OOM kills → the check's facts, findings and metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sitscheck.models import Evidence, Finding, Metric, Severity

from .codes import PROCESS_KILLED
from .facts import KernelLog, Kill, OomKillFacts
from .parse import OomKill

KILLS_METRIC = "sitscheck.oom_kill.kills"
BY_PROCESS_METRIC = "sitscheck.oom_kill.process_kills"
_EXCERPT_LINES = 6


def facts_of(kills: Sequence[OomKill], ignored: frozenset[str], log: KernelLog) -> OomKillFacts:
    rows = [_fact(kill, kill.process in ignored) for kill in kills]
    counted = sum(1 for row in rows if not row.ignored)
    return OomKillFacts(kills=rows, count=counted, ignored=len(rows) - counted, log=log)


def findings_of(kills: Sequence[OomKill], ignored: frozenset[str], ref: str) -> list[Finding]:
    """One warning per kill of a process not ignored, its memory and cgroup in the message."""
    return [
        Finding(
            code=PROCESS_KILLED,
            severity=Severity.WARNING,
            message=message_of(kill),
            evidence=[
                Evidence(
                    source="kernel log", ref=ref, excerpt="\n".join(kill.lines[-_EXCERPT_LINES:])
                )
            ],
        )
        for kill in kills
        if kill.process not in ignored
    ]


def metrics_of(kills: Sequence[OomKill], ignored: frozenset[str]) -> list[Metric]:
    counted = [kill for kill in kills if kill.process not in ignored]
    by_process = Counter((kill.process, kill.scope or "unknown") for kill in counted)
    return [
        Metric(name=KILLS_METRIC, value=len(counted), unit="{kill}"),
        *(
            Metric(
                name=BY_PROCESS_METRIC,
                value=count,
                unit="{kill}",
                labels={"process": process, "scope": scope},
            )
            for (process, scope), count in sorted(by_process.items())
        ),
    ]


def message_of(kill: OomKill) -> str:
    """The finding's message, e.g. `python3 (pid 1234) killed by the OOM killer at 518.05:
    anon-rss 30714 MiB (total-vm 52063 MiB); memory cgroup /kubepods/... reached its limit`."""
    memory = f"anon-rss {mib(kill.anon_rss_kb)} MiB" if kill.anon_rss_kb is not None else None
    if memory and kill.total_vm_kb is not None:
        memory += f" (total-vm {mib(kill.total_vm_kb)} MiB)"
    head = f"{kill.process} (pid {kill.pid}) killed by the OOM killer"
    if kill.chosen_pid is not None and kill.chosen_pid != kill.pid:
        head += f" in place of its parent {kill.chosen_process} (pid {kill.chosen_pid})"
    parts = [memory or "memory not in the log line", _where(kill)]
    when = f" at {kill.time}" if kill.time else ""
    return f"{head}{when}: " + "; ".join(parts)


def mib(kb: int) -> str:
    value = kb / 1024
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _where(kill: OomKill) -> str:
    constraint = f" ({kill.constraint})" if kill.constraint else ""
    task = f", task cgroup {kill.task_memcg}" if kill.task_memcg else ""
    if kill.scope == "memcg":
        if kill.oom_memcg:
            if kill.task_memcg == kill.oom_memcg:
                task = ""
            return f"memory cgroup {kill.oom_memcg} reached its limit{constraint}{task}"
        return f"a memory cgroup reached its limit{constraint}{task}"
    if kill.scope == "system":
        return f"the node ran out of memory{constraint}{task}"
    if kill.scope in ("cpuset", "mempolicy"):
        return f"the NUMA nodes its {kill.scope} allows ran out of memory{constraint}{task}"
    return f"constraint not in the log{task}"


def _fact(kill: OomKill, ignored: bool) -> Kill:
    return Kill(
        pid=kill.pid,
        process=kill.process,
        time=kill.time,
        anon_rss_kb=kill.anon_rss_kb,
        total_vm_kb=kill.total_vm_kb,
        file_rss_kb=kill.file_rss_kb,
        shmem_rss_kb=kill.shmem_rss_kb,
        uid=kill.uid,
        pgtables_kb=kill.pgtables_kb,
        oom_score_adj=kill.oom_score_adj,
        scope=kill.scope,
        constraint=kill.constraint,
        oom_memcg=kill.oom_memcg,
        task_memcg=kill.task_memcg,
        chosen_pid=kill.chosen_pid,
        score=kill.score,
        reaped=kill.reaped,
        ignored=ignored,
    )
