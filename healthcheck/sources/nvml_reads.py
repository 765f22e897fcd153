"""The NVML calls checks declare (`NvmlRead`), made for one GPU and kept in its record.

Each call goes through the GPU's `GpuRecorder`, so it runs under NVML's deadline and the
deadline of the check that asked for the snapshot, and a reading that is not a value is noted
in the record's `unavailable` map with its state (and its error in `failures`), the record's
value at the key None: missing is never zero. A value is kept as plain data, as nvml.json
holds it: a struct as a map of its fields, an array as a list, bytes as text.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Mapping
from typing import Any

from ..contract.declarations import NvmlRead
from .nvml import Reading
from .nvml_record import GpuRecorder

HANDLE = "handle"  # in `NvmlRead.args`: the GPU's handle
_MAX_DEPTH = 8  # NVML's structs nest two or three deep


def read_declared(rec: GpuRecorder, handle: Any, reads: Iterable[NvmlRead]) -> None:
    """Every declared call for this GPU, each value (or None) under its key."""
    for read in reads:
        args = [handle if arg == HANDLE else arg for arg in read.args]
        reading = rec.nvml.read(read.function, *args)
        if reading.ok:
            reading = _as_plain(read.function, reading)
        rec.gpu[read.key] = rec.keep(read.key, reading)


def _as_plain(function: str, reading: Reading[Any]) -> Reading[Any]:
    try:
        return Reading(plain(reading.value))
    except TypeError as exc:
        return Reading(None, "error", f"{function}: {exc}: not recorded")


def plain(value: Any, depth: int = 0) -> Any:
    """`value` as JSON data; TypeError for what has no plain form."""
    if depth > _MAX_DEPTH:
        raise TypeError(f"nested deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, ctypes.Structure | ctypes.Union):  # pynvml's structs (`_fields_`)
        return {field[0]: plain(getattr(value, field[0]), depth + 1) for field in value._fields_}
    if isinstance(value, list | tuple | ctypes.Array):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, Mapping):
        return {str(key): plain(item, depth + 1) for key, item in value.items()}
    raise TypeError(f"answered a {type(value).__name__}, which has no plain form")
