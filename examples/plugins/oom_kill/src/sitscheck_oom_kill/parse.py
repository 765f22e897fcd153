"""Pure: the kernel OOM killer's reports, read line by line, as one `OomKill` per kill.

What the kernel prints for one kill, by era (mm/oom_kill.c):

- 2.6.x-5.0: ``Out of memory: Kill process 1234 (java) score 900 or sacrifice child`` (or
  ``Memory cgroup out of memory: ...``), then ``Killed process 1235 (java) total-vm:...kB,
  anon-rss:...kB, file-rss:...kB[, shmem-rss:...kB]``: the process chosen and the one killed
  (a child of it may die instead). RHEL 6 prints ``Killed process 1234, UID 27, (mysqld)``,
  RHEL 7 ``Killed process 1234 (java), UID 0, total-vm:...``.
- 4.19 and later: a one-line summary first, ``oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=
  (null),cpuset=...,mems_allowed=0,oom_memcg=/kubepods/...,task_memcg=/kubepods/...,
  task=python3,pid=1234,uid=0`` (``global_oom`` where no cgroup limit was hit).
- 5.1 and later: ``Out of memory: Killed process 1234 (python3) total-vm:...kB, anon-rss:...kB,
  file-rss:...kB, shmem-rss:...kB, UID:0 pgtables:...kB oom_score_adj:0`` (``Memory cgroup out
  of memory: Killed process ...``; UID, pgtables and oom_score_adj came in 5.x releases).
- then, from the OOM reaper thread: ``oom_reaper: reaped process 1234 (python3), now
  anon-rss:0kB, file-rss:0kB, shmem-rss:0kB``.

The lines of one kill join into one event by pid: the summary and the reaper line with the
"Killed process" line of the same pid, the "Kill process ... or sacrifice child" line with the
kill line after it. A kill is its "Killed process" line: a summary alone is not one (the
kernel prints it before it kills, and skips the kill when the victim is already exiting), nor
is a reaper line alone (its kill line was read by an earlier run, or is not in the log).
Process names (the kernel's `comm`, at most 15 characters) may hold spaces and parentheses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # `parse_oom_kills` reads `KernelLine`s; the handler needs nothing of sitscheck
    from sitscheck.contract import KernelLine

__all__ = [
    "OomKill",
    "OomKillLines",
    "Scope",
    "Summary",
    "parse_oom_kills",
    "parse_summary",
]

Scope = Literal["memcg", "system", "cpuset", "mempolicy"]

# The memory figures are optional: a line cut before them is still a kill.
_KILLED = re.compile(
    r"(?:(?P<message>[A-Za-z][\w ]*?(?: \([\w ]+\))?): )?"
    r"Killed process (?P<pid>\d+)(?:, UID (?P<uid_rhel6>\d+),)? \((?P<name>.*)\)"
    r"(?:, UID (?P<uid_rhel7>\d+),)?"
    r"(?: (?:total-vm|vsz):(?P<total_vm>\d+)kB, anon-rss:(?P<anon>\d+)kB, file-rss:(?P<file>\d+)kB"
    r"(?:, shmem-rss:(?P<shmem>\d+)kB)?(?:, UID:(?P<uid>\d+))?(?: pgtables:(?P<pgtables>\d+)kB)?"
    r"(?: oom_score_adj:(?P<adj>-?\d+))?)?"
)
_CHOSEN = re.compile(
    r"(?P<message>.*?): Kill process (?P<pid>\d+) \((?P<name>.*)\) score (?P<score>\d+)"
    r" or sacrifice child"
)
_REAPED = re.compile(
    r"oom_reaper: reaped process (?P<pid>\d+) \((?P<name>.*)\)(?:, now anon-rss:(?P<anon>\d+)kB)?"
)
_SUMMARY_KEY = re.compile(
    r"(?:^|,)(?P<key>constraint|nodemask|cpuset|mems_allowed|oom_memcg|task_memcg)="
    r"|,(?P<flag>global_oom)(?=,|$)"
)
_SUMMARY_TAIL = re.compile(r",task=(?P<task>.*),pid=(?P<pid>\d+),uid=(?P<uid>\d+)\s*$")
_MEMCG_MESSAGE = "Memory cgroup out of memory"
_SCOPES: dict[str, Scope] = {
    "CONSTRAINT_MEMCG": "memcg",
    "CONSTRAINT_NONE": "system",
    "CONSTRAINT_CPUSET": "cpuset",
    "CONSTRAINT_MEMORY_POLICY": "mempolicy",
}


@dataclass(frozen=True, slots=True)
class Summary:
    """The ``oom-kill:`` line (4.19+): the constraint and the cgroups of one kill."""

    pid: int
    task: str
    uid: int | None
    constraint: str | None
    nodemask: str | None
    cpuset: str | None
    mems_allowed: str | None
    oom_memcg: str | None
    task_memcg: str | None
    global_oom: bool


@dataclass(frozen=True, slots=True)
class OomKill:
    """One process killed by the kernel's OOM killer. Memory figures are in kB as printed;
    None where the kernel of that era (or a cut line) does not give them."""

    pid: int
    process: str
    time: str | None
    line: str  # the "Killed process" line as the kernel printed it
    message: str | None = None  # "Out of memory", "Memory cgroup out of memory", ...
    total_vm_kb: int | None = None
    anon_rss_kb: int | None = None
    file_rss_kb: int | None = None
    shmem_rss_kb: int | None = None
    uid: int | None = None
    pgtables_kb: int | None = None
    oom_score_adj: int | None = None
    constraint: str | None = None
    oom_memcg: str | None = None
    task_memcg: str | None = None
    cpuset: str | None = None
    chosen_pid: int | None = None  # 2.6-5.0: the process chosen ("or sacrifice child")
    chosen_process: str | None = None
    score: int | None = None
    reaped: bool = False
    reaped_anon_rss_kb: int | None = None
    lines: tuple[str, ...] = field(default=())  # every line of the kill, in log order

    @property
    def scope(self) -> Scope | None:
        """What ran out: "memcg" (a memory cgroup's limit), "system" (the node's memory),
        "cpuset" / "mempolicy" (the NUMA nodes a task may use), or None (not said)."""
        if self.constraint is not None:
            return _SCOPES.get(self.constraint)
        if self.message is None:
            return None
        return "memcg" if self.message.startswith(_MEMCG_MESSAGE) else "system"


def parse_summary(body: str) -> Summary | None:
    """The fields of an ``oom-kill:constraint=...,task=NAME,pid=N,uid=N`` line, or None."""
    if not body.startswith("oom-kill:"):
        return None
    text = body[len("oom-kill:") :]
    tail = _SUMMARY_TAIL.search(text)
    if tail is None:
        return None
    head = text[: tail.start()]
    values: dict[str, str] = {}
    global_oom = False
    marks = list(_SUMMARY_KEY.finditer(head))
    for number, mark in enumerate(marks):
        if mark.group("flag"):
            global_oom = True
            continue
        end = marks[number + 1].start() if number + 1 < len(marks) else len(head)
        values[mark.group("key")] = head[mark.end() : end]
    return Summary(
        pid=int(tail.group("pid")),
        task=tail.group("task"),
        uid=int(tail.group("uid")),
        constraint=values.get("constraint") or None,
        nodemask=values.get("nodemask"),
        cpuset=values.get("cpuset"),
        mems_allowed=values.get("mems_allowed"),
        oom_memcg=values.get("oom_memcg"),
        task_memcg=values.get("task_memcg"),
        global_oom=global_oom,
    )


@dataclass(slots=True)
class _Chosen:
    pid: int
    process: str
    score: int
    message: str
    line: str


@dataclass(slots=True)
class _Report:
    """What the report being read has said before its kill line (a kill ends it)."""

    summary: Summary | None = None
    summary_line: str | None = None
    chosen: _Chosen | None = None
    lines: list[str] = field(default_factory=list)


class OomKillLines:
    """The oom_kill check's line handler in the one kernel-log pass (`KernelLogInterest`):
    fed, in log order, the message and time of each line holding one of the check's anchors
    (check.py): "Killed process ", "Kill process ", "oom-kill:", "oom_reaper: reaped process ",
    " invoked oom-killer:"."""

    def __init__(self) -> None:
        self._kills: list[OomKill] = []
        self._unreaped: dict[int, int] = {}  # pid -> its latest kill not yet reaped
        self._report = _Report()

    def feed(self, body: str, time: str | None) -> None:
        if "Killed process " in body:
            self._killed(body, time)
        elif "oom_reaper: reaped process " in body:
            self._reaped(body)
        elif body.startswith("oom-kill:"):
            self._summary(body)
        elif " invoked oom-killer:" in body:
            self._report = _Report(lines=[body])  # a new report: what an earlier one said ends
        elif "Kill process " in body:
            self._chosen(body)

    def finish(self) -> list[OomKill]:
        return list(self._kills)

    def _summary(self, body: str) -> None:
        summary = parse_summary(body)
        if summary is not None:
            self._report.summary = summary
            self._report.summary_line = body

    def _chosen(self, body: str) -> None:
        match = _CHOSEN.match(body)
        if match is None:
            return  # "Kill process N (x) sharing same memory": part of the kill before it
        self._report.chosen = _Chosen(
            int(match.group("pid")),
            match.group("name"),
            int(match.group("score")),
            match.group("message"),
            body,
        )

    def _killed(self, body: str, time: str | None) -> None:
        match = _KILLED.match(body)
        if match is None:
            return
        pid = int(match.group("pid"))
        report = self._report
        chosen = report.chosen if match.group("message") is None else None
        summary = report.summary
        # the summary names the process chosen; a child of it may die instead (before 5.1)
        if summary is not None and summary.pid not in (pid, chosen.pid if chosen else None):
            summary = None
        context = (report.summary_line if summary else None, chosen.line if chosen else None)
        lines = [*report.lines, *(x for x in context if x is not None), body]
        self._unreaped[pid] = len(self._kills)
        self._kills.append(
            OomKill(
                pid=pid,
                process=match.group("name"),
                time=time,
                line=body,
                message=match.group("message") or (chosen.message if chosen else None),
                total_vm_kb=_int(match.group("total_vm")),
                anon_rss_kb=_int(match.group("anon")),
                file_rss_kb=_int(match.group("file")),
                shmem_rss_kb=_int(match.group("shmem")),
                uid=_first_int(
                    match.group("uid"),
                    match.group("uid_rhel6"),
                    match.group("uid_rhel7"),
                    summary.uid if summary else None,
                ),
                pgtables_kb=_int(match.group("pgtables")),
                oom_score_adj=_int(match.group("adj")),
                constraint=summary.constraint if summary else None,
                oom_memcg=summary.oom_memcg if summary else None,
                task_memcg=summary.task_memcg if summary else None,
                cpuset=summary.cpuset if summary else None,
                chosen_pid=chosen.pid if chosen else None,
                chosen_process=chosen.process if chosen else None,
                score=chosen.score if chosen else None,
                lines=tuple(lines),
            )
        )
        self._report = _Report()

    def _reaped(self, body: str) -> None:
        match = _REAPED.match(body)
        if match is None:
            return
        number = self._unreaped.pop(int(match.group("pid")), None)
        if number is None:
            return  # its kill is not in the log (read by an earlier run, or cut off)
        kill = self._kills[number]
        self._kills[number] = replace(
            kill,
            reaped=True,
            reaped_anon_rss_kb=_int(match.group("anon")),
            lines=(*kill.lines, body),
        )


def parse_oom_kills(lines: list[KernelLine]) -> list[OomKill]:
    """Every OOM kill in `lines` (already split into `KernelLine`s), in log order."""
    handler = OomKillLines()
    for line in lines:
        handler.feed(line.body, line.time)
    return handler.finish()


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


def _first_int(*values: str | int | None) -> int | None:
    for value in values:
        if value is not None:
            return int(value)
    return None
