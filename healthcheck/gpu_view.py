"""The per-GPU view the GPU checks judge: the NVML snapshot, else nvidia-smi's CSV and dmon.

The NVML snapshot (live, or a bundle's `nvml.json`) is the primary form. Where it is absent
(no NVML, or a bundle an operator pasted together from command outputs), the `--query-gpu`
CSV (one sample, whatever fields it has, read by header name) and `dmon` rows are turned
into records of the same shape, so every check reads one shape and the fallback is written
once, here. A value that is not a reading is never a number: its key is in the GPU's
`unavailable` map with a state (`not_supported`, `not_available`, `not_queried`,
`no_permission`, `error`, `timeout`, `gpu_lost`, ...) and, for faults, in `failures` with the
NVML call or the nvidia-smi field that failed.

It also holds what the four GPU checks (pcie_link, gpu_telemetry, memory_errors, nvlink) share:
`skip_unless_driver` (their `applicable`), `collect_with` (their `collect`), `judge_each` (the
per-GPU loop: facts `{source, ref, gpus: [...]}`, a lost GPU not judged, failed reads → error).
Everything is pure except `load`, `collect_with` and `skip_unless_driver`, which ask the
`Sources`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .contract import CheckContext, CheckOutput
from .models import Device, Evidence, Metric
from .smi.dmon import DmonRow, parse_dmon
from .smi.query_csv import QueryCsv, field_value, parse_query_csv_result
from .smi.values import SmiErrorKind, SmiParseError, Value, ValueKind, absent
from .sources import artifacts as names
from .sources.base import Sources
from .sources.nvml_record import normalise_bus_id

NVML = "nvml"
SMI = "nvidia-smi"
# The shortest interval between two counter readings over which a rate is computed: a
# measurement floor, not a health threshold (those are rule params).
MIN_RATE_WINDOW_S = 1.0

# States that mean the reading failed: the check that needs it cannot decide (UNKNOWN).
FAULT_STATES = frozenset({"error", "timeout"})
LOST_STATES = frozenset({"gpu_lost", "reset_required"})

# The NVML call behind each snapshot key (for evidence and messages).
NVML_CALLS: Mapping[str, str] = {
    "pcie.gen_current": "nvmlDeviceGetCurrPcieLinkGeneration",
    "pcie.gen_max": "nvmlDeviceGetMaxPcieLinkGeneration",
    "pcie.gen_device_max": "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "pcie.width_current": "nvmlDeviceGetCurrPcieLinkWidth",
    "pcie.width_max": "nvmlDeviceGetMaxPcieLinkWidth",
    "pcie.replay": "nvmlDeviceGetPcieReplayCounter",
    "pcie.tx": "nvmlDeviceGetPcieThroughput",
    "pcie.rx": "nvmlDeviceGetPcieThroughput",
    "utilization": "nvmlDeviceGetUtilizationRates",
    "power.draw": "nvmlDeviceGetPowerUsage",
    "power.limit": "nvmlDeviceGetEnforcedPowerLimit",
    "power.default_limit": "nvmlDeviceGetPowerManagementDefaultLimit",
    "clocks.sm": "nvmlDeviceGetClockInfo",
    "clocks.mem": "nvmlDeviceGetClockInfo",
    "clocks_max.sm": "nvmlDeviceGetMaxClockInfo",
    "clocks_max.mem": "nvmlDeviceGetMaxClockInfo",
    "temperature.gpu": "nvmlDeviceGetTemperature",
    "temperature.memory": "nvmlDeviceGetFieldValues",
    "clock_event_reasons": "nvmlDeviceGetCurrentClocksEventReasons",
    "gpm": "nvmlGpmMetricsGet",
    "ecc.mode": "nvmlDeviceGetEccMode",
    "ecc": "nvmlDeviceGetTotalEccErrors",
    "remap": "nvmlDeviceGetRemappedRows",
    "remap.histogram": "nvmlDeviceGetRowRemapperHistogram",
    "retired_pages": "nvmlDeviceGetRetiredPages",
    "retired_pages.pending": "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvlink": "nvmlDeviceGetNvLinkState",
    "nvlink.errors": "nvmlDeviceGetNvLinkErrorCounter",
    "violations": "nvmlDeviceGetViolationStatus",
    "persistence_mode": "nvmlDeviceGetPersistenceMode",
    "recovery_action": "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)",
}

# nvidia-smi --query-gpu fields -> where the snapshot keeps them.
_CSV_INVENTORY: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # (field, path in the GPU record, unavailable key; "" when it is the path joined by dots)
    ("pcie.link.gen.current", ("pcie", "gen_current"), "pcie.gen_current"),
    ("pcie.link.gen.max", ("pcie", "gen_max"), "pcie.gen_max"),
    ("pcie.link.gen.gpumax", ("pcie", "gen_device_max"), "pcie.gen_device_max"),
    ("pcie.link.width.current", ("pcie", "width_current"), "pcie.width_current"),
    ("pcie.link.width.max", ("pcie", "width_max"), "pcie.width_max"),
    ("power.default_limit", ("power", "default_limit_w"), "power.default_limit"),
    ("clocks.max.sm", ("clocks_max_mhz", "sm"), "clocks_max.sm"),
    ("clocks.max.memory", ("clocks_max_mhz", "mem"), "clocks_max.mem"),
    ("ecc.errors.corrected.volatile.total", ("ecc", "volatile", "corrected"), ""),
    ("ecc.errors.uncorrected.volatile.total", ("ecc", "volatile", "uncorrected"), ""),
    ("ecc.errors.corrected.aggregate.total", ("ecc", "aggregate", "corrected"), ""),
    ("ecc.errors.uncorrected.aggregate.total", ("ecc", "aggregate", "uncorrected"), ""),
    ("remapped_rows.correctable", ("remap", "corrected"), "remap"),
    ("remapped_rows.uncorrectable", ("remap", "uncorrected"), "remap"),
    ("remapped_rows.pending", ("remap", "pending"), "remap"),
    ("remapped_rows.failure", ("remap", "failure"), "remap"),
    ("remapped_rows.histogram.max", ("remap", "histogram", "max"), "remap.histogram"),
    ("remapped_rows.histogram.high", ("remap", "histogram", "high"), "remap.histogram"),
    ("remapped_rows.histogram.partial", ("remap", "histogram", "partial"), "remap.histogram"),
    ("remapped_rows.histogram.low", ("remap", "histogram", "low"), "remap.histogram"),
    ("remapped_rows.histogram.none", ("remap", "histogram", "none"), "remap.histogram"),
    ("retired_pages.pending", ("retired_pages", "pending"), "retired_pages.pending"),
    ("retired_pages.single_bit_ecc.count", ("retired_pages", "sbe"), "retired_pages"),
    ("retired_pages.double_bit.count", ("retired_pages", "dbe"), "retired_pages"),
)
# Fields read as yes/no.
_CSV_FLAGS = frozenset(
    {"remapped_rows.pending", "remapped_rows.failure", "retired_pages.pending", "ecc.mode.current"}
)
# The enforced limit; `power.limit` (the requested one) when the output lacks it.
_CSV_POWER_LIMITS = ("enforced.power.limit", "power.limit")
# nvidia-smi fields -> sample fields and their unavailable key.
_CSV_SAMPLE: tuple[tuple[str, str, str], ...] = (
    ("utilization.gpu", "util_gpu", "utilization"),
    ("utilization.memory", "util_mem", "utilization"),
    ("power.draw", "power_w", "power.draw"),
    ("clocks.current.sm", "sm_clock_mhz", "clocks.sm"),
    ("clocks.current.memory", "mem_clock_mhz", "clocks.mem"),
    ("temperature.gpu", "temp_c", "temperature.gpu"),
    ("temperature.memory", "mem_temp_c", "temperature.memory"),
    ("clocks_event_reasons.active", "clock_event_reasons", "clock_event_reasons"),
)
# dmon columns -> sample fields (scale, unavailable key); the first column name present wins.
_DMON_SAMPLE: tuple[tuple[tuple[str, ...], str, float, str], ...] = (
    (("sm",), "util_gpu", 1.0, "utilization"),
    (("mem",), "util_mem", 1.0, "utilization"),
    (("pwr",), "power_w", 1.0, "power.draw"),
    (("pclk",), "sm_clock_mhz", 1.0, "clocks.sm"),
    (("mclk",), "mem_clock_mhz", 1.0, "clocks.mem"),
    (("gtemp", "temp"), "temp_c", 1.0, "temperature.gpu"),
    (("mtemp",), "mem_temp_c", 1.0, "temperature.memory"),
    (("txpci",), "pcie_tx_kbps", 1000.0, "pcie.tx"),
    (("rxpci",), "pcie_rx_kbps", 1000.0, "pcie.rx"),
)
SAMPLE_KEYS: Mapping[str, str] = {
    "util_gpu": "utilization",
    "util_mem": "utilization",
    "power_w": "power.draw",
    "sm_clock_mhz": "clocks.sm",
    "mem_clock_mhz": "clocks.mem",
    "temp_c": "temperature.gpu",
    "mem_temp_c": "temperature.memory",
    "clock_event_reasons": "clock_event_reasons",
    "pcie_tx_kbps": "pcie.tx",
    "pcie_rx_kbps": "pcie.rx",
}
_STATE_OF_KIND: Mapping[ValueKind, str] = {
    ValueKind.NOT_SUPPORTED: "not_supported",
    ValueKind.NOT_AVAILABLE: "not_available",
    ValueKind.EMPTY: "not_available",
    ValueKind.ABSENT: "not_queried",
    ValueKind.ERROR: "error",
    ValueKind.LOST: "gpu_lost",
}
_STATE_WORDS: Mapping[str, str] = {
    "not_supported": "not supported by this GPU or driver",
    "not_available": "not available (N/A)",
    "not_queried": "not in the evidence",
    "no_permission": "no permission to read it",
    "error": "the read failed",
    "timeout": "the read overran its deadline",
    "gpu_lost": "the GPU is lost",
    "reset_required": "the GPU needs a reset",
}


@dataclass(frozen=True)
class GpuView:
    """One GPU's record in snapshot shape, and where it came from."""

    index: int
    data: Mapping[str, Any]
    source: str
    ref: str

    @property
    def pci_bus_id(self) -> str | None:
        value = self.data.get("pci_bus_id")
        return value if isinstance(value, str) else None

    @property
    def name(self) -> str | None:
        value = self.data.get("name")
        return value if isinstance(value, str) else None

    @property
    def uuid(self) -> str | None:
        value = self.data.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def lost(self) -> Mapping[str, Any] | None:
        value = self.data.get("lost")
        return value if isinstance(value, dict) else None

    @property
    def unavailable(self) -> Mapping[str, str]:
        value = self.data.get("unavailable")
        return value if isinstance(value, dict) else {}

    @property
    def failures(self) -> Mapping[str, str]:
        value = self.data.get("failures")
        return value if isinstance(value, dict) else {}

    @property
    def samples(self) -> list[Mapping[str, Any]]:
        value = self.data.get("samples")
        return [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []

    @property
    def window_s(self) -> float | None:
        value = self.data.get("sampled_s")
        return float(value) if isinstance(value, int | float) and value > 0 else None

    @property
    def counter_window_s(self) -> float | None:
        """Seconds between the two readings of the window's counters (NVLink errors, PCIe
        replays, violations); bundles from before `counters_s` read them at the window's ends."""
        value = self.data.get("counters_s")
        if isinstance(value, int | float) and value > 0:
            return float(value)
        return self.window_s

    def rate_window_s(self) -> tuple[float | None, str | None]:
        """`counter_window_s` when a rate over it means something, else (None, why): a handful
        of counts over a few milliseconds (`--sample-seconds 0`) is no rate of errors per
        second or minute. Growth itself is still judged by the callers."""
        window = self.counter_window_s
        if window is None:
            return None, "the counters were read once, not at both ends of a sampling window"
        if window < MIN_RATE_WINDOW_S:
            return None, (
                f"the counters were read only {window:g} s apart (a rate needs "
                f"{MIN_RATE_WINDOW_S:g} s or more: --sample-seconds)"
            )
        return window, None

    def get(self, *path: str) -> Any:
        """The value at a path into the record (`get("pcie", "width_current")`), or None."""
        node: Any = self.data
        for part in path:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node

    def identity(self) -> dict[str, Any]:
        """The keys every check's per-GPU facts start with."""
        return {
            "index": self.index,
            "pci_bus_id": self.pci_bus_id,
            "name": self.name,
            "uuid": self.uuid,
            "source": self.source,
        }

    def device(self) -> Device:
        return Device(index=self.index, pci_bus_id=self.pci_bus_id, name=self.name)

    def hw_id(self) -> str:
        """The metric label `hw.id`: the UUID, else the bus id, else `gpu<index>`."""
        return self.uuid or self.pci_bus_id or f"gpu{self.index}"

    def labels(self, **extra: str) -> dict[str, str]:
        return {"hw.id": self.hw_id(), "gpu.index": str(self.index), **extra}

    def metric(self, name: str, value: float, unit: str, **labels: str) -> Metric:
        """A metric of this GPU, labelled `hw.id` and `gpu.index` (and `labels`)."""
        return Metric(name=name, value=value, unit=unit, labels=self.labels(**labels))

    def state(self, key: str) -> str | None:
        """Why the reading under `key` (or under a key beginning `key.`) is missing, if it is."""
        unavailable = self.unavailable
        if key in unavailable:
            return unavailable[key]
        prefix = key + "."
        return next((s for k, s in unavailable.items() if k.startswith(prefix)), None)

    def why_missing(self, key: str) -> str:
        """Words for a missing reading: its state, else that the evidence does not hold it."""
        if self.lost is not None:
            return _STATE_WORDS.get(str(self.lost.get("state")), "the GPU is lost")
        state = self.state(key)
        if state is None:
            return "not in the evidence" if self.source == SMI else "not recorded"
        return _STATE_WORDS.get(state, state)

    def evidence(self, key: str, excerpt: str | None = None) -> Evidence:
        if self.source == NVML:
            return Evidence(source=NVML, ref=NVML_CALLS.get(key, key), excerpt=excerpt)
        return Evidence(source=SMI, ref=f"{self.ref} ({key})", excerpt=excerpt)


@dataclass(frozen=True)
class GpuFleet:
    """Every GPU's view, the form they came in, and what could not be read at all."""

    gpus: tuple[GpuView, ...]
    source: str
    ref: str
    problems: tuple[str, ...] = field(default_factory=tuple)

    def faults(self, prefixes: Sequence[str]) -> list[str]:
        """Failed reads (state error/timeout) under the given keys, each naming its call."""
        found: list[str] = []
        for gpu in self.gpus:
            for key, state in gpu.unavailable.items():
                if state not in FAULT_STATES or not _under(key, prefixes):
                    continue
                detail = gpu.failures.get(key) or f"{NVML_CALLS.get(key, key)}: {state}"
                found.append(f"GPU {gpu.index} {key}: {detail}")
        return found

    def fault_error(self, prefixes: Sequence[str], limit: int = 3) -> str | None:
        """The CheckOutput.error for failed reads under `prefixes`, or None when there are none."""
        found = self.faults(prefixes)
        if not found:
            return None
        more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
        return "; ".join(found[:limit]) + more


def _under(key: str, prefixes: Sequence[str]) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


# --- what the GPU checks share -----------------------------------------------------------------

PerGpu = Callable[[GpuView, dict[str, Any], CheckOutput], None]


def skip_unless_driver(sources: Sources) -> str | None:
    """A GPU check's `applicable`: it runs wherever the driver is present."""
    driver = sources.driver()
    return None if driver.state == "present" else driver.detail


def judge_each(
    fleet: GpuFleet, what: str, key: str, read_keys: Sequence[str], per_gpu: PerGpu
) -> CheckOutput:
    """Run `per_gpu(gpu, facts entry, output)` for every GPU that answers; a lost GPU gets its
    identity and a not-judged note (the driver check reports it). The facts are
    `{source, ref, gpus: [...]}`; failed reads under `read_keys` make the output's error."""
    out = CheckOutput(not_judged=list(fleet.problems))
    gpus: list[dict[str, Any]] = []
    for gpu in fleet.gpus:
        entry = gpu.identity()
        gpus.append(entry)
        if gpu.lost is not None:
            entry["lost"] = True
            out.not_judged.append(f"GPU {gpu.index}: {what}: {gpu.why_missing(key)}")
            continue
        per_gpu(gpu, entry, out)
    out.facts = {"source": fleet.source, "ref": fleet.ref, "gpus": gpus}
    out.error = fleet.fault_error(read_keys)
    out.not_judged = group_notes(out.not_judged)
    return out


def collect_with(sources: Sources, judge: Callable[[GpuFleet], CheckOutput]) -> CheckOutput:
    """A GPU check's `collect`: the fleet from the sources, judged; UNKNOWN without one."""
    fleet = load(sources)
    if isinstance(fleet, str):
        return CheckOutput(error=fleet)
    return judge(fleet)


# --- stats -------------------------------------------------------------------------------------


def stats(values: Iterable[float | int | None]) -> dict[str, float] | None:
    """min, mean, p95 (nearest rank) and max of the readings; None when there are none."""
    numbers = sorted(float(v) for v in values if isinstance(v, int | float) and math.isfinite(v))
    if not numbers:
        return None
    rank = max(math.ceil(0.95 * len(numbers)) - 1, 0)
    return {
        "min": round(numbers[0], 3),
        "mean": round(sum(numbers) / len(numbers), 3),
        "p95": round(numbers[rank], 3),
        "max": round(numbers[-1], 3),
    }


def number(value: Any) -> float | None:
    """A reading as a float; None for anything that is not one (missing, text, a flag)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def sample_values(gpu: GpuView, name: str) -> list[float]:
    """The readings of one sample field, in order, missing ones left out."""
    return [v for s in gpu.samples if (v := number(s.get(name))) is not None]


_GPU_NOTE = re.compile(r"^GPU (?P<index>\d+): (?P<rest>.+)$", re.DOTALL)


def group_notes(notes: Sequence[str]) -> list[str]:
    """`GPU 0: x`, `GPU 1: x`, `GPU 3: x` → `GPUs 0-1, 3: x`: one line per thing not judged,
    in first-seen order; notes not about one GPU pass through."""
    grouped: dict[str, list[int]] = {}
    order: list[str] = []
    for note in notes:
        match = _GPU_NOTE.match(note)
        key = match["rest"] if match else note
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        if match:
            grouped[key].append(int(match["index"]))
    lines = []
    for key in order:
        indices = grouped[key]
        if not indices:
            lines.append(key)
        elif len(indices) == 1:
            lines.append(f"GPU {indices[0]}: {key}")
        else:
            lines.append(f"GPUs {_ranges(indices)}: {key}")
    return lines


def _ranges(indices: list[int]) -> str:
    parts: list[str] = []
    ordered = sorted(set(indices))
    start = previous = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if index is not None:
            start = previous = index
    return ", ".join(parts)


# --- building the fleet ------------------------------------------------------------------------


def load(sources: Sources) -> GpuFleet | str:
    """The GPU views from the best evidence the sources hold, or why there is none (read once
    per run and shared by every check that asks)."""
    return sources.memo("gpu_fleet", lambda: _load(sources))


def _load(sources: Sources) -> GpuFleet | str:
    snapshot, reason = sources.gpu_snapshot()
    problems: list[str] = []
    if (
        snapshot is not None
        and isinstance(snapshot.get("gpus"), list)
        and not snapshot.get("error")
    ):
        return from_snapshot(snapshot, names.NVML_JSON if sources.mode == "replay" else NVML)
    problems.append(f"NVML: {reason or (snapshot or {}).get('error') or 'no snapshot'}")
    query = sources.artifact(names.NVIDIA_SMI_QUERY_GPU)
    dmon = sources.artifact(names.NVIDIA_SMI_DMON)
    if query.text is None and dmon.text is None:
        reasons = [a.reason for a in (query, dmon) if a.reason]
        return "no GPU readings: " + "; ".join([*problems, *reasons])
    fleet = from_smi(query.text, query.ref, dmon.text, dmon.ref, problems)
    if not fleet.gpus:  # outputs there, but no GPU could be read from them: not healthy
        return "no GPU readings: " + "; ".join(fleet.problems or ("no GPU rows in the output",))
    return fleet


def from_snapshot(snapshot: Mapping[str, Any], ref: str) -> GpuFleet:
    gpus: list[GpuView] = []
    for position, raw in enumerate(snapshot.get("gpus") or []):
        if not isinstance(raw, dict):
            continue
        index = raw.get("index")
        gpus.append(GpuView(index if isinstance(index, int) else position, raw, NVML, ref))
    return GpuFleet(tuple(gpus), NVML, ref)


def from_smi(
    query_text: str | None,
    query_ref: str,
    dmon_text: str | None,
    dmon_ref: str,
    problems: Sequence[str] = (),
) -> GpuFleet:
    """GPU records from `--query-gpu` CSV (one sample) and `dmon` rows (one sample per row)."""
    issues = list(problems)
    records: dict[int, dict[str, Any]] = {}
    refs: list[str] = []
    if query_text is not None:
        try:
            parsed = parse_query_csv_result(query_text)
        except SmiParseError as exc:
            issues.append(f"{query_ref}: {exc}")
        else:
            refs.append(query_ref)
            _records_from_csv(parsed, query_ref, records, issues)
    if dmon_text is not None:
        try:
            rows = parse_dmon(dmon_text)
        except SmiParseError as exc:
            issues.append(f"{dmon_ref}: {exc}")
        else:
            refs.append(dmon_ref)
            _add_dmon(rows, records, issues, dmon_ref)
    ref = " + ".join(refs) or query_ref
    gpus = tuple(GpuView(i, records[i], SMI, ref) for i in sorted(records))
    return GpuFleet(gpus, SMI, ref, tuple(issues))


def _new_record(index: int) -> dict[str, Any]:
    return {"index": index, "unavailable": {}, "failures": {}, "samples": []}


def _records_from_csv(
    parsed: QueryCsv, ref: str, records: dict[int, dict[str, Any]], issues: list[str]
) -> None:
    fields = {f.lower() for f in parsed.fields}
    for position, row in enumerate(parsed.rows):
        index_value = row.get("index")
        listed = index_value.as_int() if index_value is not None else None
        index = position if listed is None else listed
        record = records.setdefault(index, _new_record(index))
        _csv_identity(row, record)
        for name, path, key in _CSV_INVENTORY:
            key = key or ".".join(path)
            _put(record, path, key, _cell(row, name), name, flag=name in _CSV_FLAGS)
        mode = _cell(row, "ecc.mode.current")
        _put(record, ("ecc", "mode_enabled"), "ecc.mode", mode, "ecc.mode.current", flag=True)
        limit_name = next((n for n in _CSV_POWER_LIMITS if n in fields), _CSV_POWER_LIMITS[0])
        limit = _cell(row, limit_name)
        _put(record, ("power", "enforced_limit_w"), "power.limit", limit, limit_name)
        sample: dict[str, Any] = {"t": 0.0, "source": ref}
        for name, key_in_sample, key in _CSV_SAMPLE:
            sample[key_in_sample] = _reading(
                record, key, _cell(row, name), name, bitmask=key == "clock_event_reasons"
            )
        record["samples"].append(sample)
        for cell_value in row.values():
            if cell_value.kind is ValueKind.LOST:
                record["lost"] = {"state": "gpu_lost", "detail": f"{ref}: {cell_value.raw}"}
                break
    for error in parsed.errors:
        if error.kind not in (SmiErrorKind.GPU_LOST, SmiErrorKind.DEVICE_HANDLE):
            issues.append(f"{ref}: {error.message}")
            continue
        if error.gpu_index is None:
            issues.append(f"{ref}: a GPU without a row: {error.message}")
            continue
        record = records.setdefault(error.gpu_index, _new_record(error.gpu_index))
        record["pci_bus_id"] = normalise_bus_id(error.bus_id)
        state = "gpu_lost" if error.kind is SmiErrorKind.GPU_LOST else "error"
        record["lost"] = {"state": state, "detail": f"{ref}: {error.message}"}


def _csv_identity(row: Mapping[str, Value], record: dict[str, Any]) -> None:
    for field_name, key in (("name", "name"), ("uuid", "uuid"), ("pci.bus_id", "pci_bus_id")):
        value = row.get(field_name)
        text = value.as_text() if value is not None else None
        if text:
            record[key] = normalise_bus_id(text) if key == "pci_bus_id" else text


def _cell(row: Mapping[str, Value], name: str) -> Value:
    try:
        return field_value(row, name)
    except KeyError:
        return absent()


def _reading(
    record: dict[str, Any],
    key: str,
    value: Value,
    field_name: str,
    *,
    flag: bool = False,
    bitmask: bool = False,
) -> Any:
    """The value as the snapshot would hold it; a missing one is noted under `key`."""
    if value.is_missing:
        state = _STATE_OF_KIND.get(value.kind, "not_available")
        record["unavailable"].setdefault(key, state)
        if value.is_fault:
            record["failures"].setdefault(key, f"nvidia-smi {field_name}: {value.raw}")
        return None
    try:
        if flag:
            return value.as_bool()
        if bitmask:
            return value.as_bitmask()
        value.as_float()
    except SmiParseError:
        record["unavailable"].setdefault(key, "error")
        record["failures"].setdefault(
            key, f"nvidia-smi {field_name}: unreadable value {value.raw!r}"
        )
        return None
    return value.number


def _put(
    record: dict[str, Any],
    path: tuple[str, ...],
    key: str,
    value: Value,
    field_name: str,
    flag: bool = False,
) -> None:
    reading = _reading(record, key, value, field_name, flag=flag)
    node = record
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if reading is not None or path[-1] not in node:
        node[path[-1]] = reading


def _add_dmon(
    rows: list[DmonRow], records: dict[int, dict[str, Any]], issues: list[str], ref: str
) -> None:
    for row in rows:
        if row.is_process:
            continue
        if row.gpu is None:
            issues.append(f"{ref}:{row.line}: GPU {row.gpu_id!r} is not an index")
            continue
        record = records.setdefault(row.gpu, _new_record(row.gpu))
        sample: dict[str, Any] = {"t": None, "source": ref}
        for columns, name, scale, key in _DMON_SAMPLE:
            value = next((v for c in columns if (v := row.get(c)) is not None), None)
            if value is None:
                continue
            reading = _reading(record, key, value, f"dmon {columns[0]}")
            sample[name] = None if reading is None else round(float(reading) * scale, 3)
        replay = row.get("pci")
        if replay is not None:
            count = _reading(record, "pcie.replay", replay, "dmon pci")
            record.setdefault("pcie", {}).setdefault("replay_counter_start", count)
        record["samples"].append(sample)


@dataclass(frozen=True)
class FleetCheck:
    """The work of a GPU check that judges the fleet view: it runs wherever the driver is."""

    judge: Callable[[GpuFleet], CheckOutput]

    def applicable(self, sources: Sources, config: object) -> str | None:
        return skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return collect_with(ctx.sources, self.judge)
