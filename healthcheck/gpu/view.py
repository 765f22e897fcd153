"""One GPU's record in snapshot shape (`GpuView`) and every GPU's (`GpuFleet`).

The NVML snapshot (live, or a bundle's `nvml.json`) is the primary form; the nvidia-smi
adapters (`from_csv`) build records of the same shape, so every check reads one shape. A
value that is not a reading is never a number: its key is in the GPU's `unavailable` map
with a state (`not_supported`, `not_available`, `not_queried`, `no_permission`, `error`,
`timeout`, `gpu_lost`, ...) and, for faults, in `failures` with the NVML call or the
nvidia-smi field that failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from ..models import Device, Evidence, Metric
from .calls import (
    FAULT_STATES,
    IDENTITY_ONLY,
    KEY_PATHS,
    MIN_RATE_WINDOW_S,
    NVML,
    NVML_CALLS,
    source_name,
)
from .records import SAMPLE_KEYS

_STATE_WORDS: Mapping[str, str] = {
    "not_supported": "not supported by this GPU or driver",
    "not_available": "not available (N/A)",
    "not_queried": "not in the evidence",
    "no_permission": "no permission to read it",
    "error": "the read failed",
    "timeout": "the read overran its deadline",
    "gpu_lost": "the GPU is lost",
    "reset_required": "the GPU needs a reset",
    "relative_only": "printed only relative to T.Limit (nvidia-smi -q, 550+): no absolute value",
    "one_reading": (
        "one reading only (its growth or rate needs the counter read at both ends of a "
        "sampling window: NVML)"
    ),
}


class GpuView(Struct, frozen=True):
    """One GPU's record in snapshot shape, and where it came from: `source` gave its identity
    (and every value the record's `sources` map does not name another source for); `refs`
    holds the reference of each source that contributed (fusion)."""

    index: int
    data: Mapping[str, Any]
    source: str
    ref: str
    refs: Mapping[str, str] = field(default_factory=dict)

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
            **({"sources": dict(self.sources)} if self.sources else {}),
        }

    @property
    def sources(self) -> Mapping[str, str]:
        """The values (record paths, `samples` for the samples) that came from a source other
        than `source`, each with its source."""
        value = self.data.get("sources")
        return value if isinstance(value, dict) else {}

    def source_of(self, key: str) -> str:
        """The source of the reading under an unavailable key or record path."""
        path = KEY_PATHS.get(key, key)
        if key in SAMPLE_KEYS.values():
            path = "samples"
        named = [k for k in self.sources if path == k or path.startswith(k + ".")]
        return self.sources[max(named, key=len)] if named else self.source

    def ref_of(self, source: str) -> str:
        return self.refs.get(source, self.ref)

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
            return "not in the evidence" if self.source != NVML else "not recorded"
        return _STATE_WORDS.get(state, state)

    def evidence(self, key: str, excerpt: str | None = None) -> Evidence:
        """Where the reading under `key` came from: the NVML call, else the output and key."""
        source = self.source_of(key)
        if source == NVML:
            return Evidence(source=NVML, ref=NVML_CALLS.get(key, key), excerpt=excerpt)
        return Evidence(source=source, ref=f"{self.ref_of(source)} ({key})", excerpt=excerpt)


class Disagreement(Struct, frozen=True):
    """Two sources giving different values of one thing that cannot differ between readings
    (identity, firmware, limits, modes), or a GPU one source lists and another does not."""

    what: str  # the record path or node-wide name ("vbios", "pcie.width_max", "driver_version")
    index: int | None  # the GPU's, None for a node-wide value
    pci_bus_id: str | None
    first: tuple[str, str, Any]  # (source, ref, value)
    second: tuple[str, str, Any]

    def device(self) -> Device | None:
        if self.index is None:
            return None
        return Device(index=self.index, pci_bus_id=self.pci_bus_id)

    def message(self) -> str:
        (a, a_ref, a_value), (b, b_ref, b_value) = self.first, self.second
        who = f"GPU {self.index}: " if self.index is not None else ""
        return (
            f"{who}{self.what} differs between sources: {source_name(a)} ({a_ref}) reads "
            f"{a_value!r}, {source_name(b)} ({b_ref}) reads {b_value!r}"
        )


class GpuFleet(Struct, frozen=True):
    """Every GPU's view, the form they came in, and what could not be read at all.

    `indexed`: the GPUs' indices are the driver's (NVML, nvidia-smi's index), not printed
    order; `complete`: the evidence lists every GPU the driver has (not `-q -i N`);
    `attached`: the count the output states, where it does. A fused fleet (`fusion.merge`) has
    the `sources` that contributed, their `refs` and the `disagreements` between them."""

    gpus: tuple[GpuView, ...]
    source: str
    ref: str
    problems: tuple[str, ...] = field(default_factory=tuple)
    indexed: bool = True
    complete: bool = True
    attached: int | None = None
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    sources: tuple[str, ...] = field(default_factory=tuple)
    refs: Mapping[str, str] = field(default_factory=dict)
    disagreements: tuple[Disagreement, ...] = field(default_factory=tuple)
    listed: Mapping[str, int] = field(default_factory=dict)
    missing: tuple[str, ...] = field(default_factory=tuple)  # why absent outputs are absent
    # of those, the outputs that failed (a command's error, a file that could not be read):
    # what the GPUs' readings from the other outputs lack is then said with its cause
    unread: tuple[str, ...] = field(default_factory=tuple)
    # an earlier identity not carried over to a GPU, and why (`resolve`; the driver check's)
    identity_notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_readings(self) -> bool:
        """Whether any source gave readings (not only identities: `nvidia-smi -L`, sysfs)."""
        return any(s not in IDENTITY_ONLY for s in self.sources or (self.source,))

    def no_readings(self) -> str:
        """Why the GPU checks have nothing to judge (for their UNKNOWN)."""
        return "no GPU readings: " + "; ".join([*self.problems, *self.missing])

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
