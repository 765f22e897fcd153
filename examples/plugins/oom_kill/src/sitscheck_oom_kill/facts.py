"""The oom_kill check's facts and config section: typed models, each with a JSON Schema.

`OomKillFacts` is what the check reports under `checks.oom_kill.facts` (rules read it, e.g.
`checks.oom_kill.facts.count`); `OomKillSettings` validates `check_config: {oom_kill: {...}}`
of a site's config.yaml.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .parse import Scope

COMM_MAX = 15  # the kernel keeps a process name in 16 bytes (TASK_COMM_LEN), NUL included


class Kill(BaseModel):
    """One process killed by the OOM killer (memory in kB, as the kernel prints it)."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    process: str = Field(description="the kernel's name of the process (comm, <= 15 chars)")
    time: str | None = Field(description="the log line's timestamp, as the log tool wrote it")
    anon_rss_kb: int | None = Field(description="anonymous memory resident when killed")
    total_vm_kb: int | None
    file_rss_kb: int | None
    shmem_rss_kb: int | None
    uid: int | None
    pgtables_kb: int | None
    oom_score_adj: int | None
    scope: Scope | None = Field(
        description="what ran out: a memory cgroup's limit, the node's memory, a cpuset's or "
        "a memory policy's NUMA nodes; null where the report does not say"
    )
    constraint: str | None = Field(description="the kernel's constraint (4.19+ reports)")
    oom_memcg: str | None = Field(description="the memory cgroup whose limit was hit")
    task_memcg: str | None = Field(description="the killed process's memory cgroup")
    chosen_pid: int | None = Field(
        description="before 5.1: the process the killer chose (a child of it may die instead)"
    )
    score: int | None = Field(description="before 5.1: the chosen process's badness score")
    reaped: bool = Field(description="the OOM reaper reported freeing its memory")
    ignored: bool = Field(description="its name is in the config's ignore_processes")


class KernelLog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="where the kernel log was read from")
    lines: int = Field(description="lines read")
    note: str | None = None


class OomKillFacts(BaseModel):
    """`checks.oom_kill.facts`."""

    model_config = ConfigDict(extra="forbid")

    kills: list[Kill] = Field(description="every OOM kill in the log, in log order")
    count: int = Field(description="kills counted: those of processes not ignored")
    ignored: int = Field(description="kills of processes named in ignore_processes")
    log: KernelLog


class OomKillSettings(BaseModel):
    """`check_config: {oom_kill: {...}}` in config.yaml."""

    model_config = ConfigDict(extra="forbid")

    ignore_processes: list[str] = Field(
        default_factory=list,
        description="process names (exact, as the kernel prints them: at most 15 characters) "
        "whose kills are kept in the facts but raise no finding and are not counted",
    )

    @field_validator("ignore_processes")
    @classmethod
    def _kernel_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or len(name) > COMM_MAX:
                raise ValueError(
                    f"{name!r} can never match: the kernel names a process by at most "
                    f"{COMM_MAX} characters (its comm, as `ps -o comm` shows it)"
                )
        return names
