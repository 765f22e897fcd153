"""`nvidia-smi -q` (any ``-d`` selection, any ``-i``): the indentation tree and the typed
per-GPU readings the checks judge.

The text is a tree by indentation: ``Label : value`` leaves, ``Label`` sections, top-level
``Driver Version`` / ``CUDA Version`` / ``Attached GPUs`` and one ``GPU 00000000:3B:00.0``
section per GPU (``GPU 0000:01:00.0`` before the 8-digit domain). Nesting is read from the
indentation itself, not from fixed columns: the colon column moved between drivers (375.x,
4xx-5xx, and 590.x, whose ``Processes`` block still uses the older width), and pastes may be
indented as a whole or tab-indented. A node can carry a value and children at once
(``Process ID : 11327`` over its ``Type``/``Name``; ``HW Slowdown : Not Active`` over
``HW Thermal Slowdown``).

Layouts handled (375.66 .. 590.48 in the corpus): ``Clocks Throttle Reasons`` (<535) and
``Clocks Event Reasons``; ``Power Readings`` with ``Power Limit``/``Enforced Power Limit`` (<530)
and ``GPU Power Readings`` with ``Requested``/``Current Power Limit``, ``Average``/
``Instantaneous Power Draw`` (590); ``Ecc Mode``/``ECC Mode``; ECC counts as ``Single Bit``/
``Double Bit`` trees (old), ``SRAM/DRAM Correctable/Uncorrectable`` (A100 era) or with ``SRAM
Uncorrectable Parity``/``SEC-DED`` (550+); temperatures absolute (``GPU Shutdown Temp``) or
relative to T.Limit (``GPU Shutdown T.Limit Temp : -8 C``), kept apart; a section printed as a
bare leaf (``Clocks Throttle Reasons : N/A``, ``Power Smoothing : N/A``) answers for its fields.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache

from msgspec import Struct, field

from .values import (
    SmiError,
    SmiParseError,
    Value,
    ValueKind,
    absent,
    decode,
    indented_data_lines,
    is_command_echo,
    normalize_text,
)

__all__ = [
    "Ecc",
    "EccScope",
    "PcieLink",
    "PowerReadings",
    "QNode",
    "RemappedRows",
    "SmiGpu",
    "SmiProcess",
    "SmiQuery",
    "Temperatures",
    "parse_query_q",
]

_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$", re.IGNORECASE)
# A label: words of letters, digits and ._()/+&'#- ; it ends in a non-space, so the spaces
# before the colon are matched only once (no quadratic backtracking on long lines).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9 ._()/+&'#-]*[A-Za-z0-9._()/+&'#-])?"
_KEY_VALUE = re.compile(rf"^(?P<label>{_LABEL})\s*:(?P<rest>\s.*)?$")
_SECTION = re.compile(rf"^(?P<label>{_LABEL})$")
_GPU_SECTION = re.compile(
    r"^GPU\s+(?P<bus>[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$"
)
_TOP_KEYS = frozenset({"timestamp", "driver version", "cuda version", "attached gpus"})
_MAX_DEPTH = 32

# Labels printed differently by different drivers for the same thing (lower case).
_ALIASES: tuple[frozenset[str], ...] = (
    frozenset({"clocks event reasons", "clocks throttle reasons"}),
    frozenset({"clocks event reasons counters", "clocks throttle reasons counters"}),
    frozenset({"gpu power readings", "power readings"}),
    frozenset({"processes", "compute processes"}),
)

# Where "N/A" means the GPU or platform lacks the feature (the nvidia-smi man page: "Any
# unsupported data is indicated by a N/A"): whole sections by their top label, and single
# leaves. N/A elsewhere (current temperature, power draw, clocks, utilization, memory usage,
# PCIe link) reads NOT_AVAILABLE.
_NA_UNSUPPORTED_SECTIONS = frozenset(
    {
        "fan speed",
        "module power readings",
        "gpu memory power readings",
        "ecc mode",
        "ecc errors",
        "retired pages",
        "remapped rows",
        "fabric",
        "platform info",
        "driver model",
        "gpu operation mode",
        "inforom version",
        "inforom bbx object flush",
        "ibmnpu",
        "gpu virtualization mode",
        "mig mode",
        "mig devices",
        "fru part number",
        "serial number",
        "board part number",
        "gpu part number",
        "multigpu board",
        "board id",
        "module id",
        "gpu pdi",
        "conf compute protected memory usage",
        "dram encryption mode",
        "power smoothing",
        "workload power profiles",
        "applications clocks",
        "default applications clocks",
        "deferred clocks",
        "clock policy",
        "encoder stats",
        "fbc stats",
        "display mode",
        "display active",
        "display attached",
        "persistence mode",
        "accounting mode",
        "accounting mode buffer size",
        "addressing mode",
        "gpu reset status",
        "gpu c2c mode",
        "gpu recovery action",
        "sparse operation mode",
        "capabilities",
        "gsp firmware version",
        "clocks event reasons",
        "clocks throttle reasons",
        "clocks event reasons counters",
        "max customer boost clocks",
        "voltage",
        "edpp multiplier",
        "bar1 memory usage",
        "processes",
        "compute processes",
    }
)
_NA_UNSUPPORTED_LEAVES = frozenset(
    {
        "pci/gpu link info/pcie generation/host max",
        "pci/gpu link info/pcie generation/device max",
        "pci/gpu link info/pcie generation/device current",
        "pci/bridge chip/type",
        "pci/bridge chip/firmware",
        "pci/atomic caps inbound",
        "pci/atomic caps outbound",
        "temperature/gpu target temperature",
        "temperature/memory current temp",
        "temperature/memory max operating temp",
        "utilization/encoder",
        "utilization/decoder",
        "utilization/jpeg",
        "utilization/ofa",
        "gpu power readings/power management",
        "power readings/power management",
    }
)


class QNode(Struct, frozen=True):
    """One printed line of the tree: `label` (stripped), `value` (None for a section header),
    `children` in printed order, and its 1-based `line`. The root has label ``""``."""

    label: str
    value: str | None
    children: tuple[QNode, ...]
    line: int

    def child(self, label: str) -> QNode | None:
        """The first child printed as `label` (any case and spacing, or an alias such as
        ``Clocks Throttle Reasons`` for ``Clocks Event Reasons``)."""
        wanted = _label_key(label)
        names = _alias_group(wanted)
        for node in self.children:
            if _label_key(node.label) in names:
                return node
        return None

    def children_named(self, label: str) -> tuple[QNode, ...]:
        """Every child printed as `label` (labels repeat: processes, MIG devices)."""
        names = _alias_group(_label_key(label))
        return tuple(n for n in self.children if _label_key(n.label) in names)

    def find(self, path: str) -> QNode | None:
        """The node at a ``/``-separated label path, e.g. ``"PCI/GPU Link Info/Link Width/Max"``.
        A segment not found among the children is looked for under children that carry a
        value (``Clocks Event Reasons/HW Thermal Slowdown`` sits under ``HW Slowdown``)."""
        node: QNode | None = self
        for segment in _segments(path):
            assert node is not None
            found = node.child(segment)
            if found is None:
                for holder in node.children:
                    if holder.value is not None and holder.children:
                        found = holder.child(segment)
                        if found is not None:
                            break
            if found is None:
                return None
            node = found
        return node

    def __getitem__(self, label: str) -> QNode:
        found = self.child(label)
        if found is None:
            raise KeyError(label)
        return found

    def __contains__(self, label: object) -> bool:
        return isinstance(label, str) and self.child(label) is not None

    def __iter__(self) -> Iterator[QNode]:
        return iter(self.children)

    def to_dict(self) -> dict[str, object]:
        """The subtree as nested dicts keyed by printed label: a leaf is its value string, a
        section a dict, a node with both a value and children a dict whose ``""`` key is the
        value; a label printed more than once under one parent maps to a list."""
        out: dict[str, object] = {}
        if self.value is not None and self.children:
            out[""] = self.value
        for node in self.children:
            entry: object = node.to_dict() if node.children else node.value
            if node.label in out:
                previous = out[node.label]
                if isinstance(previous, _Repeated):
                    previous.append(entry)
                else:
                    out[node.label] = _Repeated([previous, entry])
            else:
                out[node.label] = entry
        return {k: list(v) if isinstance(v, _Repeated) else v for k, v in out.items()}


class _Repeated(list[object]):
    """Marks a list built from repeated labels (a printed value is never a list)."""


@lru_cache(maxsize=4096)
def _label_key(label: str) -> str:
    """A label in any case and spacing (cached: every lookup keys each child it passes, and
    a GPU's tree repeats the same few hundred labels)."""
    return " ".join(label.lower().split())


@lru_cache(maxsize=4096)
def _alias_group(key: str) -> frozenset[str]:
    for group in _ALIASES:
        if key in group:
            return group
    return frozenset({key})


def _segments(path: str) -> list[str]:
    return [s for s in (part.strip() for part in path.split("/")) if s]


def _na_kind(path: list[str]) -> ValueKind:
    keys = [_label_key(s) for s in path]
    if not keys:
        return ValueKind.NOT_AVAILABLE
    if _alias_group(keys[0]) & _NA_UNSUPPORTED_SECTIONS:
        return ValueKind.NOT_SUPPORTED
    if "/".join(keys) in _NA_UNSUPPORTED_LEAVES or "t.limit" in keys[-1]:
        return ValueKind.NOT_SUPPORTED
    return ValueKind.NOT_AVAILABLE


def _value_at(root: QNode, path: str) -> Value:
    """The decoded value at `path` under `root`; ABSENT when not printed. A section printed as
    a bare missing leaf (``Remapped Rows : N/A``) gives that value to everything under it."""
    segments = _segments(path)
    node: QNode = root
    walked: list[str] = []
    for segment in segments:
        found = node.find(segment)
        if found is None:
            if node is not root and not node.children and node.value is not None:
                inherited = decode(node.value, na=_na_kind(walked))
                if inherited.is_missing:
                    return inherited
            return absent()
        node = found
        walked.append(segment)
    if node.value is None or node is root:
        return absent()
    return decode(node.value, na=_na_kind(segments))


def _first(root: QNode, *paths: str) -> Value:
    """The first of `paths` that is printed (alternatives across driver layouts)."""
    for path in paths:
        value = _value_at(root, path)
        if value.kind is not ValueKind.ABSENT:
            return value
    return absent()


# --- typed views ---------------------------------------------------------------------------


class PcieLink(Struct, frozen=True):
    """The ``GPU Link Info`` readings: PCIe gen and width (current, max), replays, throughput."""

    gen_current: Value  # PCI/GPU Link Info/PCIe Generation/Current
    gen_max: Value  # .../Max (the most this GPU and system allow)
    gen_device_current: Value  # .../Device Current (535+)
    gen_device_max: Value  # .../Device Max (535+)
    gen_host_max: Value  # .../Host Max (535+; N/A in VMs)
    width_current: Value  # PCI/GPU Link Info/Link Width/Current ("16x" -> 16, unit "x")
    width_max: Value
    replays_since_reset: Value
    replay_rollovers: Value
    tx_throughput: Value
    rx_throughput: Value


class Temperatures(Struct, frozen=True):
    """Absolute temperatures (``GPU Shutdown Temp : 92 C``) and, on 550+ Hopper, the ones
    printed relative to T.Limit (``GPU Shutdown T.Limit Temp : -8 C``) are separate fields."""

    gpu_current: Value
    gpu_tlimit: Value  # "GPU T.Limit Temp": margin to the T.Limit
    gpu_shutdown: Value
    gpu_slowdown: Value
    gpu_max_operating: Value
    gpu_target: Value
    gpu_shutdown_tlimit: Value
    gpu_slowdown_tlimit: Value
    gpu_max_operating_tlimit: Value
    memory_current: Value
    memory_max_operating: Value
    memory_max_operating_tlimit: Value


class PowerReadings(Struct, frozen=True):
    """One power block. `draw` is ``Power Draw``, or on 590+ (which prints only average and
    instantaneous) ``Average Power Draw`` — what ``--query-gpu=power.draw`` reports there.
    `enforced_limit` is ``Current Power Limit`` (530+) or ``Enforced Power Limit`` (older);
    `requested_limit` is ``Requested Power Limit`` (530+) or the old ``Power Limit``."""

    management: Value
    draw: Value
    draw_average: Value
    draw_instant: Value
    enforced_limit: Value
    requested_limit: Value
    default_limit: Value
    min_limit: Value
    max_limit: Value


class EccScope(Struct, frozen=True):
    """ECC counts of one scope (volatile or aggregate). On the SRAM/DRAM layouts the totals
    are sums of the printed parts; on the old Single/Double Bit layout `dram_*` is ``Device
    Memory``, the totals are the printed ``Total`` and `sram_*` are ABSENT."""

    sram_correctable: Value
    sram_uncorrectable: Value  # "SRAM Uncorrectable", or Parity + SEC-DED (550+)
    dram_correctable: Value
    dram_uncorrectable: Value
    correctable_total: Value
    uncorrectable_total: Value


class Ecc(Struct, frozen=True):
    """One GPU's ECC mode, volatile and aggregate counts, repair flags and retired pages."""

    mode_current: Value
    mode_pending: Value
    volatile: EccScope
    aggregate: EccScope
    sram_threshold_exceeded: Value
    channel_repair_pending: Value
    tpc_repair_pending: Value
    unrepairable_memory: Value
    retired_single_bit: Value
    retired_double_bit: Value
    retired_pending: Value


class RemappedRows(Struct, frozen=True):
    """The ``Remapped Rows`` section: counts by cause, pending, failure, bank histogram."""

    correctable: Value
    uncorrectable: Value
    pending: Value
    failure: Value
    histogram_max: Value
    histogram_high: Value
    histogram_partial: Value
    histogram_low: Value
    histogram_none: Value


class SmiProcess(Struct, frozen=True):
    """One process of the ``Processes`` section: pid, type, name, memory and MIG instance ids."""

    pid: Value
    type: Value  # "C", "G", "C+G"
    name: Value
    used_memory: Value
    gpu_instance_id: Value
    compute_instance_id: Value
    line: int


@dataclasses.dataclass(frozen=True, slots=True)
class SmiGpu:
    """One ``GPU <bus id>`` section: the readings checks use, and the raw `tree` (the section
    node) for everything else; `get` reads any label path from it."""

    bus_id: str  # as printed after "GPU "
    line: int
    product_name: str | None
    uuid: str | None
    serial: str | None
    vbios_version: str | None
    persistence_mode: Value
    mig_mode: Value
    reset_required: Value
    drain_and_reset_recommended: Value
    pcie: PcieLink
    clocks_event_reasons: Mapping[str, Value]  # flattened: "HW Thermal Slowdown" included
    temperature: Temperatures
    power: PowerReadings
    module_power: PowerReadings
    memory_power_draw: Value
    ecc: Ecc
    remapped_rows: RemappedRows
    processes: tuple[SmiProcess, ...]
    tree: QNode = dataclasses.field(repr=False)

    def get(self, path: str) -> Value:
        """The value at a label path (``"Clocks Event Reasons/SW Power Cap"``; the older
        ``"Clocks Throttle Reasons/..."`` names the same node); ABSENT when not printed."""
        return _value_at(self.tree, path)

    def node(self, path: str) -> QNode | None:
        return self.tree.find(path)


@dataclasses.dataclass(frozen=True, slots=True)
class SmiQuery:
    """A whole ``-q`` document: the top-level fields, one `SmiGpu` per GPU section (``-i``
    shows one section while ``Attached GPUs`` counts all), the tool's error lines, the tree."""

    timestamp: str | None
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None
    gpus: tuple[SmiGpu, ...]
    errors: tuple[SmiError, ...]
    tree: QNode = dataclasses.field(repr=False)


def _pcie(root: QNode) -> PcieLink:
    gen = "PCI/GPU Link Info/PCIe Generation/"
    width = "PCI/GPU Link Info/Link Width/"
    return PcieLink(
        gen_current=_value_at(root, gen + "Current"),
        gen_max=_value_at(root, gen + "Max"),
        gen_device_current=_value_at(root, gen + "Device Current"),
        gen_device_max=_value_at(root, gen + "Device Max"),
        gen_host_max=_value_at(root, gen + "Host Max"),
        width_current=_value_at(root, width + "Current"),
        width_max=_value_at(root, width + "Max"),
        replays_since_reset=_value_at(root, "PCI/Replays Since Reset"),
        replay_rollovers=_value_at(root, "PCI/Replay Number Rollovers"),
        tx_throughput=_value_at(root, "PCI/Tx Throughput"),
        rx_throughput=_value_at(root, "PCI/Rx Throughput"),
    )


def _temperatures(root: QNode) -> Temperatures:
    t = "Temperature/"
    return Temperatures(
        gpu_current=_first(root, t + "GPU Current Temp", t + "Gpu"),
        gpu_tlimit=_value_at(root, t + "GPU T.Limit Temp"),
        gpu_shutdown=_value_at(root, t + "GPU Shutdown Temp"),
        gpu_slowdown=_value_at(root, t + "GPU Slowdown Temp"),
        gpu_max_operating=_value_at(root, t + "GPU Max Operating Temp"),
        gpu_target=_value_at(root, t + "GPU Target Temperature"),
        gpu_shutdown_tlimit=_value_at(root, t + "GPU Shutdown T.Limit Temp"),
        gpu_slowdown_tlimit=_value_at(root, t + "GPU Slowdown T.Limit Temp"),
        gpu_max_operating_tlimit=_value_at(root, t + "GPU Max Operating T.Limit Temp"),
        memory_current=_value_at(root, t + "Memory Current Temp"),
        memory_max_operating=_value_at(root, t + "Memory Max Operating Temp"),
        memory_max_operating_tlimit=_value_at(root, t + "Memory Max Operating T.Limit Temp"),
    )


def _power(root: QNode, section: str) -> PowerReadings:
    s = section + "/"
    return PowerReadings(
        management=_value_at(root, s + "Power Management"),
        draw=_first(root, s + "Power Draw", s + "Average Power Draw"),
        draw_average=_value_at(root, s + "Average Power Draw"),
        draw_instant=_value_at(root, s + "Instantaneous Power Draw"),
        enforced_limit=_first(root, s + "Current Power Limit", s + "Enforced Power Limit"),
        requested_limit=_first(root, s + "Requested Power Limit", s + "Power Limit"),
        default_limit=_value_at(root, s + "Default Power Limit"),
        min_limit=_value_at(root, s + "Min Power Limit"),
        max_limit=_value_at(root, s + "Max Power Limit"),
    )


_SEVERITY = (ValueKind.LOST, ValueKind.ERROR, ValueKind.NOT_AVAILABLE, ValueKind.NOT_SUPPORTED)


def _sum(*parts: Value) -> Value:
    """The sum of the printed counts; with none printed, the most telling missing part."""
    numbers = [p for p in parts if not p.is_missing and isinstance(p.number, int)]
    if numbers:
        total = sum(int(p.number or 0) for p in numbers)
        return Value(str(total), ValueKind.NUMBER, total)
    for kind in _SEVERITY:
        for part in parts:
            if part.kind is kind:
                return part
    for part in parts:
        if part.kind is not ValueKind.ABSENT:
            return part
    return absent()


def _ecc_scope(root: QNode, scope: str) -> EccScope:
    s = f"ECC Errors/{scope}/"
    if root.find(s + "Single Bit") is not None or root.find(s + "Double Bit") is not None:
        return EccScope(
            sram_correctable=absent(),
            sram_uncorrectable=absent(),
            dram_correctable=_value_at(root, s + "Single Bit/Device Memory"),
            dram_uncorrectable=_value_at(root, s + "Double Bit/Device Memory"),
            correctable_total=_value_at(root, s + "Single Bit/Total"),
            uncorrectable_total=_value_at(root, s + "Double Bit/Total"),
        )
    sram_corr = _value_at(root, s + "SRAM Correctable")
    sram_unc = _value_at(root, s + "SRAM Uncorrectable")
    if sram_unc.kind is ValueKind.ABSENT:
        parity = _value_at(root, s + "SRAM Uncorrectable Parity")
        secded = _value_at(root, s + "SRAM Uncorrectable SEC-DED")
        if ValueKind.ABSENT not in (parity.kind, secded.kind):
            sram_unc = _sum(parity, secded)
    dram_corr = _value_at(root, s + "DRAM Correctable")
    dram_unc = _value_at(root, s + "DRAM Uncorrectable")
    return EccScope(
        sram_correctable=sram_corr,
        sram_uncorrectable=sram_unc,
        dram_correctable=dram_corr,
        dram_uncorrectable=dram_unc,
        correctable_total=_sum(sram_corr, dram_corr),
        uncorrectable_total=_sum(sram_unc, dram_unc),
    )


def _ecc(root: QNode) -> Ecc:
    return Ecc(
        mode_current=_value_at(root, "ECC Mode/Current"),
        mode_pending=_value_at(root, "ECC Mode/Pending"),
        volatile=_ecc_scope(root, "Volatile"),
        aggregate=_ecc_scope(root, "Aggregate"),
        sram_threshold_exceeded=_value_at(root, "ECC Errors/Aggregate/SRAM Threshold Exceeded"),
        channel_repair_pending=_value_at(root, "ECC Errors/Channel Repair Pending"),
        tpc_repair_pending=_value_at(root, "ECC Errors/TPC Repair Pending"),
        unrepairable_memory=_value_at(root, "ECC Errors/Unrepairable Memory"),
        retired_single_bit=_value_at(root, "Retired Pages/Single Bit ECC"),
        retired_double_bit=_value_at(root, "Retired Pages/Double Bit ECC"),
        retired_pending=_first(
            root,
            "Retired Pages/Pending Page Blacklist",
            "Retired Pages/Pending Page Retirement",
            "Retired Pages/Pending",
        ),
    )


def _remapped_rows(root: QNode) -> RemappedRows:
    r = "Remapped Rows/"
    h = r + "Bank Remap Availability Histogram/"
    return RemappedRows(
        correctable=_value_at(root, r + "Correctable Error"),
        uncorrectable=_value_at(root, r + "Uncorrectable Error"),
        pending=_value_at(root, r + "Pending"),
        failure=_value_at(root, r + "Remapping Failure Occurred"),
        histogram_max=_value_at(root, h + "Max"),
        histogram_high=_value_at(root, h + "High"),
        histogram_partial=_value_at(root, h + "Partial"),
        histogram_low=_value_at(root, h + "Low"),
        histogram_none=_value_at(root, h + "None"),
    )


def _event_reasons(root: QNode) -> dict[str, Value]:
    section = root.child("Clocks Event Reasons")
    reasons: dict[str, Value] = {}
    if section is None:
        return reasons
    na = _na_kind([section.label])
    stack = list(reversed(section.children))
    while stack:
        node = stack.pop()
        if node.value is not None:
            reasons[node.label] = decode(node.value, na=na)
        stack.extend(reversed(node.children))
    return reasons


def _processes(root: QNode) -> tuple[SmiProcess, ...]:
    section = root.child("Processes")
    if section is None:
        return ()
    found: list[SmiProcess] = []
    gi: Value = absent()
    ci: Value = absent()
    for node in section.children:
        key = _label_key(node.label)
        if key == "gpu instance id":
            gi = decode(node.value or "", na=ValueKind.NOT_SUPPORTED)
        elif key == "compute instance id":
            ci = decode(node.value or "", na=ValueKind.NOT_SUPPORTED)
        elif key == "process id":
            found.append(
                SmiProcess(
                    pid=decode(node.value or ""),
                    type=_value_at(node, "Type"),
                    name=_value_at(node, "Name"),
                    used_memory=_value_at(node, "Used GPU Memory"),
                    gpu_instance_id=gi,
                    compute_instance_id=ci,
                    line=node.line,
                )
            )
            gi, ci = absent(), absent()
    return tuple(found)


def _gpu(section: QNode, bus_id: str) -> SmiGpu:
    return SmiGpu(
        bus_id=bus_id,
        line=section.line,
        product_name=_value_at(section, "Product Name").as_text(),
        uuid=_value_at(section, "GPU UUID").as_text(),
        serial=_value_at(section, "Serial Number").as_text(),
        vbios_version=_value_at(section, "VBIOS Version").as_text(),
        persistence_mode=_value_at(section, "Persistence Mode"),
        mig_mode=_value_at(section, "MIG Mode/Current"),
        reset_required=_value_at(section, "GPU Reset Status/Reset Required"),
        drain_and_reset_recommended=_value_at(
            section, "GPU Reset Status/Drain and Reset Recommended"
        ),
        pcie=_pcie(section),
        clocks_event_reasons=_event_reasons(section),
        temperature=_temperatures(section),
        power=_power(section, "GPU Power Readings"),
        module_power=_power(section, "Module Power Readings"),
        memory_power_draw=_first(
            section,
            "GPU Memory Power Readings/Power Draw",
            "GPU Memory Power Readings/Average Power Draw",
        ),
        ecc=_ecc(section),
        remapped_rows=_remapped_rows(section),
        processes=_processes(section),
        tree=section,
    )


# --- the tree -----------------------------------------------------------------------------


class _Building(Struct):
    """A tree node while the text is read (mutable children); frozen into a `QNode` at the end."""

    label: str
    value: str | None
    line: int
    indent: int
    children: list[_Building] = field(default_factory=list)


def _freeze(node: _Building) -> QNode:
    return QNode(node.label, node.value, tuple(_freeze(c) for c in node.children), node.line)


def _common_indent(lines: list[str]) -> int:
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    return min(indents, default=0)


def _build(text: str) -> tuple[QNode, list[SmiError]]:
    lines = normalize_text(text)
    dedent = _common_indent(lines)
    root = _Building("", None, 0, -1)
    stack = [root]
    errors: list[SmiError] = []
    for line_no, raw in indented_data_lines(lines, errors):
        stripped = raw.strip()
        if _BANNER.match(stripped):
            continue
        indent = len(raw) - len(raw.lstrip(" ")) - dedent
        gpu = _GPU_SECTION.match(stripped)
        match = None if gpu else _KEY_VALUE.match(stripped)
        if gpu:
            label, value = stripped, None
        elif match:
            label, value = match["label"], (match["rest"] or "").strip()
        else:
            section = _SECTION.match(stripped)
            if section is None:
                if is_command_echo(stripped):
                    continue
                raise SmiParseError(f"not a line of nvidia-smi -q: {stripped[:80]!r}", line_no)
            label, value = section["label"], None
        while stack[-1].indent >= indent:
            stack.pop()
        if len(stack) > _MAX_DEPTH:
            raise SmiParseError("nesting too deep for nvidia-smi -q output", line_no)
        node = _Building(label, value, line_no, indent)
        stack[-1].children.append(node)
        stack.append(node)
    return _freeze(root), errors


def _check_shape(root: QNode, errors: list[SmiError]) -> None:
    sections = [n for n in root.children if _GPU_SECTION.match(n.label)]
    top_keys = {id(n) for n in root.children if _label_key(n.label) in _TOP_KEYS}
    if not sections and not top_keys and not errors:
        raise SmiParseError("no 'GPU <bus id>' section and no 'Driver Version': not -q output")
    if sections:
        first = sections[0]
        for node in root.children:
            if node.line > first.line and node.value is not None and id(node) not in top_keys:
                raise SmiParseError(
                    f"{node.label!r} outside any GPU section: indentation lost?", node.line
                )


def parse_query_q(text: str) -> SmiQuery:
    """Parse ``nvidia-smi -q`` output (``-a``, ``-q -d ...``, ``-q -i N``)."""
    root, errors = _build(text)
    _check_shape(root, errors)
    gpus = []
    for node in root.children:
        match = _GPU_SECTION.match(node.label)
        if match:
            gpus.append(_gpu(node, match["bus"]))
    attached = _value_at(root, "Attached GPUs")
    count = attached.number if isinstance(attached.number, int) else None
    return SmiQuery(
        timestamp=_value_at(root, "Timestamp").as_text(),
        driver_version=_value_at(root, "Driver Version").as_text(),
        cuda_version=_value_at(root, "CUDA Version").as_text(),
        attached_gpus=count,
        gpus=tuple(gpus),
        errors=tuple(errors),
        tree=root,
    )
