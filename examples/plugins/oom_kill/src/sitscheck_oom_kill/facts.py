"""The oom_kill check's facts and config section: typed models, each with a JSON Schema.

`OomKillFacts` is what the check reports under `checks.oom_kill.facts` (rules read it, e.g.
`checks.oom_kill.facts.count`); `OomKillSettings` validates `check_config: {oom_kill: {...}}`
of a site's config.yaml.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct, field

from .parse import Scope

COMM_MAX = 15  # the kernel keeps a process name in 16 bytes (TASK_COMM_LEN), NUL included


class Kill(Struct, kw_only=True, forbid_unknown_fields=True):
    """One process killed by the OOM killer (memory in kB, as the kernel prints it)."""

    pid: int
    process: Annotated[
        str, Meta(description="the kernel's name of the process (comm, <= 15 chars)")
    ]
    time: Annotated[
        str | None, Meta(description="the log line's timestamp, as the log tool wrote it")
    ]
    anon_rss_kb: Annotated[int | None, Meta(description="anonymous memory resident when killed")]
    total_vm_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    uid: int | None
    pgtables_kb: int | None
    oom_score_adj: int | None
    scope: Annotated[
        Scope | None,
        Meta(
            description="what ran out: a memory cgroup's limit, the node's memory, a cpuset's or "
            "a memory policy's NUMA nodes; null where the report does not say"
        ),
    ]
    constraint: Annotated[str | None, Meta(description="the kernel's constraint (4.19+ reports)")]
    oom_memcg: Annotated[str | None, Meta(description="the memory cgroup whose limit was hit")]
    task_memcg: Annotated[str | None, Meta(description="the killed process's memory cgroup")]
    chosen_pid: Annotated[
        int | None,
        Meta(
            description="before 5.1: the process the killer chose (a child of it may die instead)"
        ),
    ]
    score: Annotated[int | None, Meta(description="before 5.1: the chosen process's badness score")]
    reaped: Annotated[bool, Meta(description="the OOM reaper reported freeing its memory")]
    ignored: Annotated[bool, Meta(description="its name is in the config's ignore_processes")]


class KernelLog(Struct, kw_only=True, forbid_unknown_fields=True):
    source: Annotated[str, Meta(description="where the kernel log was read from")]
    lines: Annotated[int, Meta(description="lines read")]
    note: str | None = None


class OomKillFacts(Struct, kw_only=True, forbid_unknown_fields=True):
    """`checks.oom_kill.facts`."""

    kills: Annotated[list[Kill], Meta(description="every OOM kill in the log, in log order")]
    count: Annotated[int, Meta(description="kills counted: those of processes not ignored")]
    ignored: Annotated[int, Meta(description="kills of processes named in ignore_processes")]
    log: KernelLog


class OomKillSettings(Struct, kw_only=True, forbid_unknown_fields=True):
    """`check_config: {oom_kill: {...}}` in config.yaml."""

    ignore_processes: Annotated[
        list[str],
        Meta(
            description="process names (exact, as the kernel prints them: at most 15 characters) "
            "whose kills are kept in the facts but raise no finding and are not counted"
        ),
    ] = field(default_factory=list)

    def __post_init__(self) -> None:  # "field: ..." places the message at the field
        for name in self.ignore_processes:
            if not name or len(name) > COMM_MAX:
                raise ValueError(
                    f"ignore_processes: {name!r} can never match: the kernel names a process by "
                    f"at most {COMM_MAX} characters (its comm, as `ps -o comm` shows it)"
                )
