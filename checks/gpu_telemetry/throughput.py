"""Pure: a GPU's NVLink data throughput over the window, bytes/s per direction.

Two NVML sources, the first that has values wins:
- GPM (Hopper and newer): NVML_GPM_METRIC_NVLINK_TOTAL_RX/TX_PER_SEC, MiB/s over every link,
  one value per GPM interval (~1 s), so min/mean/p95/max over the window;
- the NVLink throughput counters (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX/TX, KiB, cumulative)
  read at both ends of the window: one rate, the mean over the counters' interval (its
  min/p95/max are that rate too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct

MIB, KIB = 1024.0 * 1024.0, 1024.0
DIRECTIONS = {"rx": "receive", "tx": "transmit"}  # semconv network.io.direction
GPM_FIELDS = {"rx": "nvlink_rx_mib_s", "tx": "nvlink_tx_mib_s"}

Stats = Callable[[Sequence[float]], dict[str, float] | None]


class Throughput(Struct, frozen=True):
    """A GPU's NVLink throughput stats per direction, and the NVML source they came from."""

    source: str  # "gpm" or "counters"
    stats: Mapping[str, dict[str, float]]  # "rx"/"tx" -> min/mean/p95/max, bytes/s


def from_gpm(records: object, stats: Stats) -> Throughput | None:
    """The GPM intervals' NVLink rates, where every direction has at least one."""
    if not isinstance(records, list):
        return None
    out: dict[str, dict[str, float]] = {}
    for direction, name in GPM_FIELDS.items():
        values = [
            number * MIB
            for r in records
            if isinstance(r, dict) and (number := _number(r.get(name))) is not None
        ]
        summary = stats(values)
        if summary is None:
            return None
        out[direction] = summary
    return Throughput("gpm", out)


def from_counters(
    start: object, end: object, window: tuple[float | None, str | None], stats: Stats
) -> Throughput | str | None:
    """The counters' rate over the window (its seconds, else why there is no rate over it);
    None when they were not read at both ends, a reason when they were and give no rate."""
    seconds, no_window = window
    if not isinstance(start, dict) or not isinstance(end, dict):
        return None
    out: dict[str, dict[str, float]] = {}
    for direction in DIRECTIONS:
        first, last = _number(start.get(direction)), _number(end.get(direction))
        if first is None or last is None:
            return None
        if seconds is None:
            return no_window or "no window to take a rate over"
        if last < first:
            return f"the {direction} counter went back ({first:g} -> {last:g} KiB): reset, no rate"
        summary = stats([(last - first) * KIB / seconds])
        if summary is None:
            return None
        out[direction] = summary
    return Throughput("counters", out)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
