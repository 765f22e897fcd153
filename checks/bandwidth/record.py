"""Pure: the bandwidth probe's record (`bandwidth.json`) read into typed figures.

The record is what `python -m sitscheck.probes.bandwidth` printed (see
`sitscheck.probes.bandwidth.measure`):
per CUDA ordinal the GPU's identity and its best host→device, device→host and device-local
figures; the concurrent host→device round; the peer writes. Anything else in it is ignored; a
record of another format or version, or one that is not JSON, is refused with the reason.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec import Struct
from sitscheck.probes.bandwidth import FORMAT

VERSION = 1


class RecordError(ValueError):
    pass


class GpuFigures(Struct, frozen=True):
    """One GPU's entry of the record: its identity and best figures (GB/s), or its error."""

    ordinal: int
    uuid: str | None
    pci_bus_id: str | None
    name: str | None
    h2d_gbs: float | None
    d2h_gbs: float | None
    local_copy_gbs: float | None  # bytes copied per second (nvbandwidth's device_local_copy)
    hbm_gbs: float | None  # bytes read and written per second
    local_verified: bool | None
    error: str | None


class PeerFigure(Struct, frozen=True):
    """One peer-to-peer copy's figure: from one CUDA ordinal to another, GB/s."""

    src: int  # CUDA ordinals
    dst: int
    gbs: float


class Record(Struct, frozen=True):
    """All of `bandwidth.json`: per-GPU, concurrent and peer figures, plan, timings, errors."""

    gpus: tuple[GpuFigures, ...]
    concurrent_h2d: dict[int, float] | None  # ordinal -> GB/s, all GPUs copying at once
    concurrent_wall_gbs: float | None  # all their bytes over the host's wall time
    p2p: tuple[PeerFigure, ...]
    p2p_refused: tuple[tuple[int, int], ...]
    cuda_driver_version: int | None
    device_count: int | None
    elapsed_s: float | None
    phases_s: dict[str, float]
    plan: dict[str, Any]
    errors: tuple[str, ...]
    stopped: str | None


def parse_record(text: str) -> Record:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"line {exc.lineno}: not valid JSON: {exc.msg}") from exc
    except RecursionError as exc:
        raise RecordError("nested too deep to be the probe's record") from exc
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise RecordError(
            f"format {data.get('format')!r} version {data.get('version')!r} is not "
            f"{FORMAT!r} version {VERSION}"
        )
    return Record(
        gpus=tuple(_gpu(g) for g in _list(data, "gpus")),
        concurrent_h2d=_concurrent(data.get("concurrent_h2d")),
        concurrent_wall_gbs=_best(data.get("concurrent_h2d"), "wall_gbs"),
        p2p=tuple(
            PeerFigure(_int(p, "src"), _int(p, "dst"), _number(p.get("gbs"), "p2p gbs"))
            for p in _list(data, "p2p")
        ),
        p2p_refused=tuple((_int(p, "src"), _int(p, "dst")) for p in _list(data, "p2p_refused")),
        cuda_driver_version=_optional_int(data.get("cuda_driver_version")),
        device_count=_optional_int(data.get("device_count")),
        elapsed_s=_optional_number(data.get("elapsed_s")),
        phases_s={
            str(k): float(v) for k, v in _mapping(data, "phases_s").items() if _number_like(v)
        },
        plan=_mapping(data, "plan"),
        errors=tuple(str(e) for e in _strings(data, "errors")),
        stopped=str(data["stopped"]) if data.get("stopped") else None,
    )


def _gpu(entry: dict[str, Any]) -> GpuFigures:
    verified = entry.get("local_verified")
    return GpuFigures(
        ordinal=_int(entry, "ordinal"),
        uuid=_text(entry.get("uuid")),
        pci_bus_id=_text(entry.get("pci_bus_id")),
        name=_text(entry.get("name")),
        h2d_gbs=_best(entry.get("h2d")),
        d2h_gbs=_best(entry.get("d2h")),
        local_copy_gbs=_optional_number(entry.get("local_copy_gbs")),
        hbm_gbs=_optional_number(entry.get("hbm_gbs")),
        local_verified=verified if isinstance(verified, bool) else None,
        error=_text(entry.get("error")),
    )


def _concurrent(value: Any) -> dict[int, float] | None:
    if not isinstance(value, dict) or not isinstance(value.get("gbs"), dict):
        return None
    figures = value["gbs"]
    if not all(isinstance(k, str) and k.isdigit() for k in figures):
        raise RecordError(f"concurrent_h2d.gbs is not keyed by CUDA ordinal: {sorted(figures)}")
    return {int(k): _number(v, "concurrent gbs") for k, v in figures.items()}


def _best(series: Any, key: str = "gbs") -> float | None:
    return _optional_number(series.get(key)) if isinstance(series, dict) else None


def _list(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise RecordError(f"`{key}` is not a list of objects")
    return value


def _mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return dict(value) if isinstance(value, dict) else {}


def _strings(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(f"`{key}` is not a list")
    return value


def _number_like(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int(entry: dict[str, Any], key: str) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(f"`{key}` is not an integer: {value!r}")
    return value


def _number(value: Any, what: str) -> float:
    number = _optional_number(value)
    if number is None:
        raise RecordError(f"{what} is not a number: {value!r}")
    return number


def _optional_number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def _optional_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
