"""`nvidia-smi -L` → GPU records holding identity only (index, name, UUID), and the GPUs it
reports lost (with their bus id)."""

from __future__ import annotations

from ..smi.list_gpus import parse_list_gpus
from ..smi.values import SmiParseError
from .calls import SMI_L
from .records import is_lost_line, lost_record, new_record
from .view import GpuFleet, GpuView


def from_list(text: str, ref: str) -> GpuFleet:
    try:
        parsed = parse_list_gpus(text)
    except SmiParseError as exc:
        return GpuFleet((), SMI_L, ref, (f"{ref}: {exc}",))
    problems: list[str] = []
    views: list[GpuView] = []
    for gpu in parsed.gpus:
        record = new_record(gpu.index)
        record["name"] = gpu.name or None
        if gpu.uuid:
            record["uuid"] = gpu.uuid
        if gpu.serial:
            record["serial"] = gpu.serial
        views.append(GpuView(gpu.index, record, SMI_L, ref))
    for error in parsed.errors:
        if not is_lost_line(error):
            problems.append(f"{ref}:{error.line}: {error.message}")
            continue
        if error.gpu_index is None:
            problems.append(f"{ref}:{error.line}: a GPU without an index: {error.message}")
            continue
        record = lost_record(error.gpu_index, error, f"{ref}: {error.message}")
        views.append(GpuView(error.gpu_index, record, SMI_L, ref))
    views.sort(key=lambda v: v.index)
    return GpuFleet(tuple(views), SMI_L, ref, tuple(problems))
