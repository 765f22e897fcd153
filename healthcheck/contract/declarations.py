"""What a check declares about itself: its evidence, kernel-log interest, codes and metrics.

Plain frozen records (msgspec Structs: `msgspec.structs.replace` makes a changed copy),
importable without the report model, NVML or any check's code: listing the checks and starting up
read these declarations only. A built-in check and a third-party
plugin declare the same things the same way; the rest of the system (live reading, `collect`,
replay, the one kernel-log pass, findings, `explain`, every reporter, `rules validate`) derives
what it does for a check from them and from nothing else.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Any, Protocol, TypeVar

from msgspec import Struct, field

from ..kernlog.anchor import Anchor
from ..status import Severity


class FindingKind(str, Enum):
    """A condition holds now (a link at x8) and clears when it stops holding; an event happened
    (an Xid) and is new once, then persists only while the evidence still shows it."""

    CONDITION = "condition"
    EVENT = "event"


class ActionCategory(str, Enum):
    """What an automation may do about a finding (DCGM's ISOLATE/RESET/TRIAGE, NVSentinel's
    recommended actions), beside the action's text for a person."""

    NONE = "none"  # nothing to do (informative)
    RERUN = "rerun"  # the evidence was incomplete: run again
    CONFIGURE = "configure"  # a setting of the node or of sitscheck
    TRIAGE = "triage"  # a person looks: logs, counters, a second run under load
    RESET_GPU = "reset_gpu"  # drain the GPU's work and reset it
    REBOOT = "reboot"  # drain the node and reboot it
    ISOLATE = "isolate"  # drain the node (or GPU) and keep it out of service
    REPLACE = "replace"  # hardware inspection / RMA


class MetricKind(str, Enum):
    GAUGE = "gauge"  # a value now (a temperature, a width)
    COUNTER = "counter"  # cumulative since a start (errors since boot)
    EVENT = "event"  # a count of events this run saw (Xids in the log)


class MetricSpec(Struct, frozen=True):
    """One metric a check emits: written once, read by every reporter (node_exporter's
    `typedDesc`, Datadog's `metadata.csv`). A check emits only metrics it declares."""

    name: str
    unit: str
    help: str
    kind: MetricKind = MetricKind.GAUGE


class CodeSpec(Struct, frozen=True):
    """One finding code: its severity, meaning and action, written once. Findings carry the
    kind and action category; `sitscheck explain` and the docs read the rest."""

    code: str
    severity: Severity
    meaning: str
    action: str
    kind: FindingKind = FindingKind.CONDITION
    category: ActionCategory = ActionCategory.TRIAGE
    severity_note: str = ""  # e.g. "warning for drain P2P" where the severity depends
    name: str = ""  # a short name (an Xid's), where the code is a number


class CodeTable(Protocol):
    """A check's finding codes. Most checks list theirs (`Codes`); a catalogue such as the Xid
    one can answer for numbered codes itself and read spellings such as `Xid 79`."""

    def get(self, code: str) -> CodeSpec | None: ...

    def __iter__(self) -> Iterator[CodeSpec]: ...

    def normalise(self, text: str) -> str | None:
        """The code `text` names in this table's own spelling, or None."""
        ...


_Key = TypeVar("_Key", bound=Hashable)
_Entry = TypeVar("_Entry")


def unique_index(
    entries: Iterable[_Entry], key: Callable[[_Entry], _Key], table: str
) -> dict[_Key, _Entry]:
    """`entries` by `key`, refusing a key given twice (ValueError naming `table` and the key):
    in a plain dict the second entry would silently shadow the first."""
    out: dict[_Key, _Entry] = {}
    for entry in entries:
        name = key(entry)
        if name in out:
            raise ValueError(f"{table}: {name!r} is listed twice")
        out[name] = entry
    return out


class Codes:
    """A plain table of `CodeSpec`s (a code listed twice is refused)."""

    def __init__(self, specs: Iterable[CodeSpec]) -> None:
        self._specs = unique_index(specs, lambda spec: spec.code, "finding codes")

    def get(self, code: str) -> CodeSpec | None:
        return self._specs.get(code)

    def __iter__(self) -> Iterator[CodeSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def normalise(self, text: str) -> str | None:
        wanted = text.strip().lower()
        return wanted if wanted in self._specs else None


class CommandSpec(Struct, frozen=True):
    """A command whose output a check reads. Live: run with this argv (no shell); `collect`:
    its output saved as `file`; replay: `file` read from the bundle."""

    file: str
    argv: tuple[str, ...]
    summary: str
    timeout_s: float | None = None  # never longer than the check's own deadline


class LogFilesSpec(Struct, frozen=True):
    """Log files named by a run option (e.g. `--trt-log`): read live from the paths the option
    gives, recorded by `collect` into `folder/`, replayed from there."""

    folder: str
    option: str


class NvmlRead(Struct, frozen=True):
    """One NVML call a check reads for each GPU. Live: `function(*args)` is called for every
    GPU (`"handle"` in `args` stands for the GPU's handle; numbers are passed as they are),
    under the NVML deadline and the check's, its value kept as plain data (a struct as its
    fields, bytes as text) in the GPU's record under `key`; `collect`: that record is the
    GPU's in nvml.json; replay: read from there. A reading that is not a value is noted in the
    record's `unavailable` map with its state (not_supported, error, timeout, ...), never
    written as zero. `ctx.nvml_readings()` gives the check its declared readings per GPU.

    `key` is a top-level key of the GPU's record (lower case, digits, `_`) that sitscheck's own
    snapshot does not write; `function` an NVML query (`nvmlDeviceGet...`): a declaration only
    reads."""

    key: str
    function: str
    args: tuple[int | str, ...] = ("handle",)
    summary: str = ""


# The keys of a GPU's NVML record that sitscheck's own snapshot writes, and the first part of
# every key it notes in the record's `unavailable` map: a declared read takes another, so its
# reading never overwrites one of these nor is mistaken for one (a test holds the snapshot to
# this list).
SNAPSHOT_KEYS = frozenset(
    {
        *("index", "lost", "unavailable", "failures", "sources"),
        *("name", "uuid", "pci", "pci_bus_id", "pci_device_id", "serial", "vbios"),
        *("inforom_image", "recovery_action", "pcie", "power", "temperature", "clocks_max"),
        *("clocks_max_mhz", "ecc", "remap", "retired_pages", "nvlink", "nvlink_throughput"),
        *("samples", "sampled_s", "utilization", "clocks", "clock_event_reasons", "memory"),
        *("gpm", "counters_s", "violations", "violations_ns_start", "violations_ns_end"),
        *("energy", "energy_mj_start", "energy_mj_end", "load"),
        *("nvlink_throughput_kib_start", "nvlink_throughput_kib_end"),
    }
)
_NVML_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
_NVML_QUERY = re.compile(r"nvmlDeviceGet[A-Za-z0-9_]+\Z")


class EvidenceSpec(Struct, frozen=True):
    """Everything a check reads of the node. Globs are relative to the root they name (`/sys`,
    `/proc`); `files` are absolute paths or globs, recorded under `files/` of a bundle."""

    summary: str = ""
    commands: tuple[CommandSpec, ...] = ()
    sysfs: tuple[str, ...] = ()
    # "module:function": a function of the sources giving sysfs paths (relative to /sys) to
    # record, for evidence a glob cannot name (the ports on each GPU's PCIe path)
    sysfs_paths: tuple[str, ...] = ()
    procfs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    nvml: tuple[str, ...] = ()  # keys of each GPU's NVML record the check reads
    nvml_reads: tuple[NvmlRead, ...] = ()  # NVML calls made for the check on every GPU
    kernel_log: bool = False
    logs: tuple[LogFilesSpec, ...] = ()


def nvml_read_problems(check: Any) -> list[str]:
    """What is wrong with the NVML reads a check declares (none: [])."""
    reads = getattr(getattr(check, "evidence", None), "nvml_reads", ())
    problems: list[str] = []
    seen: set[str] = set()
    for read in reads:
        if not isinstance(read, NvmlRead):
            problems.append(f"an NVML read that is no NvmlRead: {type(read).__name__}")
            continue
        said = f"NVML read {read.key!r} ({read.function})"
        if not _NVML_KEY.match(str(read.key)):
            problems.append(f"{said}: its key is no record key (a-z, 0-9, _)")
        elif read.key in SNAPSHOT_KEYS:
            problems.append(f"{said}: sitscheck's own snapshot writes {read.key!r}")
        elif read.key in seen:
            problems.append(f"{said}: {read.key!r} declared twice")
        seen.add(read.key)
        if not _NVML_QUERY.match(str(read.function)):
            problems.append(f"{said}: not an NVML device query (nvmlDeviceGet...)")
        if "handle" not in read.args or not all(map(_plain_arg, read.args)):
            problems.append(f'{said}: its args are "handle" and integers, the handle among them')
    return problems


def _plain_arg(arg: object) -> bool:
    return arg == "handle" or (isinstance(arg, int) and not isinstance(arg, bool))


class LineHandler(Protocol):
    """Receives, in log order, the kernel-log lines its check's interest wants."""

    def feed(self, text: str, time: str | None) -> None:
        """One line: its message (every log tool's prefix stripped) and its time as the log
        gives it (None: none)."""
        ...

    def finish(self) -> Any:
        """What the check reads back from `ctx.kernel_log()` (`.result`)."""
        ...


class KernelLogInterest(Struct, frozen=True):
    """A check's part in the one kernel-log pass: anchors (substrings found in C over the
    whole log, with the neighbouring lines each asks for) and a line handler ("module:
    attribute", a class or factory made once per pass). The candidate lines are those near
    its anchors; `head_lines`: the log's first lines are candidates too (the tail of a report
    cut off by the start of the log). With `wants` (words, found in C too), of the candidates
    only those holding one of the words; its handler is fed each (`LineHandler.feed`)."""

    anchors: tuple[Anchor, ...]
    handler: str
    wants: tuple[bytes, ...] = ()
    head_lines: int = 0

    def wanted(self, raw_line: str) -> bool:
        """Whether a candidate line is fed to the handler (what the scan tells in C)."""
        return not self.wants or any(word.decode() in raw_line for word in self.wants)


class RuleFiles(Struct, frozen=True):
    """Rule files and profile files a package ships: the `*.yaml` in the package named by
    `package`, and `profiles/*.yaml` under it (entry-point group `sitscheck.rules`)."""

    package: str


class ProfileKey(Struct, frozen=True):
    """A key a hardware profile may set for a check's rules (`profile.<name>`)."""

    name: str
    type: str  # "number" | "integer" | "string" | "boolean" | "object"
    help: str


class WorkloadSpec(Struct, frozen=True):
    """An active check's workload: a phase of `sitscheck accept`'s plan, and what `run --load`
    and `run --bandwidth` start (`workloads.children` runs them all).

    `module` is started as an isolated child interpreter, one per GPU (CUDA_VISIBLE_DEVICES
    set to that GPU), as `python -I -m MODULE PHASE --seconds S --engine E`; it speaks the
    JSON-lines protocol of `sitscheck.probes.accept.child`. The parent writes the phase's
    record (artifact `record`, e.g. `accept/memtest.json`), which `collect` keeps and replay
    reads, and which the check's `collect` judges. `share`: the phase's fraction of the
    budget (None: what the other phases leave); `order`: its place in the plan;
    `cooldown_s`: an idle pause before it; `multi_gpu`: it needs two GPUs or more;
    `startup_s`: the part of the phase its children need to start, not working;
    `keeps_busy`: it keeps its GPU at full load for the seconds asked (ending early, with its
    result, on SIGTERM), so `run --load` may run it on every GPU through the sampling window
    (the first such workload in plan order, of the run's checks or else of every installed
    check)."""

    phase: str
    module: str
    record: str
    summary: str
    share: float | None
    order: int
    cooldown_s: float = 0.0
    multi_gpu: bool = False
    startup_s: float = 10.0  # what of the phase a child takes to start (interpreter, CUDA, torch)
    keeps_busy: bool = False  # `run --load` may run it to keep the GPUs busy while sampled


class Declaration(Struct, frozen=True):
    """A check's declarations gathered, with defaults for what it leaves out."""

    evidence: EvidenceSpec = field(default_factory=EvidenceSpec)
    workload: WorkloadSpec | None = None
    kernel_log: KernelLogInterest | None = None
    codes: CodeTable = field(default_factory=lambda: Codes(()))
    metrics: tuple[MetricSpec, ...] = ()
    facts: str | None = None  # "module:Model", a Struct of the facts (`contract.facts`)
    config: str | None = None  # "module:Model", the check's config section
    profile_keys: tuple[ProfileKey, ...] = ()


def resolve(reference: str) -> Any:
    """The object "module:attribute" names (imported when first needed)."""
    module, _, attribute = reference.partition(":")
    target: Any = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        target = getattr(target, part)
    return target


def declaration_of(check: Any) -> Declaration:
    """A check's declarations; a lazy code table ("module:attribute") is resolved here."""
    codes: Any = getattr(check, "codes", None)
    if isinstance(codes, str):
        codes = resolve(codes)
    if codes is None:
        codes = Codes(())
    elif not hasattr(codes, "get"):
        codes = Codes(codes)
    return Declaration(
        evidence=getattr(check, "evidence", None) or EvidenceSpec(),
        workload=getattr(check, "workload", None),
        kernel_log=getattr(check, "kernel_log", None),
        codes=codes,
        metrics=tuple(getattr(check, "metrics", ()) or ()),
        facts=getattr(check, "facts", None),
        config=getattr(check, "config", None),
        profile_keys=tuple(getattr(check, "profile_keys", ()) or ()),
    )


def metric_kinds(metrics: Iterable[MetricSpec]) -> Mapping[str, MetricSpec]:
    return {spec.name: spec for spec in metrics}
