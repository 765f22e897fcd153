"""`nvidia-smi -L`: the GPUs (and their MIG devices) the driver lists, and the errors it printed.

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16)
      MIG 1g.10gb     Device  0: (UUID: MIG-feb88891-0321-5fef-9c87-d4af3b54259e)
    Unable to determine the device handle for GPU1: 0000:44:00.0: GPU is lost.  Reboot ...

Older drivers print MIG UUIDs as ``MIG-GPU-<uuid>/<gi>/<ci>`` and single spaces; very old ones
``(S/N: ...)`` beside or instead of the UUID. Error lines (see `values.classify_message`) become
`SmiError`s, never GPUs; any other line is an `SmiParseError`.
"""

from __future__ import annotations

import re

from msgspec import Struct

from .values import (
    SmiError,
    SmiErrorKind,
    SmiParseError,
    data_lines,
    is_command_echo,
)

__all__ = ["GpuList", "ListedGpu", "MigDevice", "parse_list_gpus"]

_GPU = re.compile(r"^GPU\s+(?P<index>\d{1,6}):(?P<rest>.*)$")
_ATTRS = re.compile(r"^(?:UUID|S/N)\s*:", re.IGNORECASE)
_MIG = re.compile(
    r"^MIG\s+(?P<profile>\S+)\s+Device\s+(?P<index>\d{1,6}):\s*\(UUID:(?P<uuid>[^()]*)\)$",
    re.IGNORECASE,
)


class MigDevice(Struct, frozen=True):
    """One ``MIG ... Device N:`` line under its GPU: profile, device number, UUID and line."""

    profile: str  # "3g.71gb", "1g.10gb+me"
    index: int  # the "Device  N" number within its GPU
    uuid: str | None  # "MIG-..." (or old "MIG-GPU-.../7/0")
    line: int


class ListedGpu(Struct, frozen=True):
    """One ``GPU N: NAME (UUID: ...)`` line, with the MIG devices listed under it."""

    index: int
    name: str
    uuid: str | None  # "GPU-..."
    serial: str | None  # only very old drivers print "(S/N: ...)"
    mig_devices: tuple[MigDevice, ...]
    line: int


class GpuList(Struct, frozen=True):
    """All of `nvidia-smi -L`: the GPUs in printed order and the errors it printed."""

    gpus: tuple[ListedGpu, ...]
    errors: tuple[SmiError, ...]

    @property
    def lost(self) -> tuple[SmiError, ...]:
        """The GPUs reported lost ("GPU is lost.  Reboot the system to recover this GPU")."""
        return tuple(e for e in self.errors if e.kind is SmiErrorKind.GPU_LOST)


def _attrs(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in text.split(","):
        key, _, value = part.partition(":")
        found[key.strip().upper()] = value.strip()
    return found


def _gpu(match: re.Match[str], line_no: int) -> ListedGpu:
    rest = match["rest"].strip()
    uuid: str | None = None
    serial: str | None = None
    name = rest
    opening = rest.rfind("(")
    if opening >= 0 and not rest.endswith(")") and _ATTRS.match(rest[opening + 1 :]):
        raise SmiParseError(f"GPU line cut short: {rest[:80]!r}", line_no)
    inside = rest[opening + 1 : -1] if opening >= 0 and rest.endswith(")") else ""
    if _ATTRS.match(inside) and ")" not in inside:
        name = rest[:opening].strip()
        attrs = _attrs(inside)
        uuid = attrs.get("UUID") or None
        serial = attrs.get("S/N") or None
        if uuid is not None and uuid.upper() in ("N/A", "[N/A]"):
            uuid = None
    if not name:
        raise SmiParseError("GPU line without a name", line_no)
    return ListedGpu(int(match["index"]), name, uuid, serial, (), line_no)


def parse_list_gpus(text: str) -> GpuList:
    """Parse `nvidia-smi -L` output (blank lines and a pasted command line are skipped)."""
    gpus: list[ListedGpu] = []
    migs: list[list[MigDevice]] = []
    errors: list[SmiError] = []
    seen: set[int] = set()
    for line_no, stripped in data_lines(text, errors):
        gpu_match = _GPU.match(stripped)
        if gpu_match:
            gpu = _gpu(gpu_match, line_no)
            if gpu.index in seen:
                raise SmiParseError(f"GPU {gpu.index} listed twice", line_no)
            seen.add(gpu.index)
            gpus.append(gpu)
            migs.append([])
            continue
        mig_match = _MIG.match(stripped)
        if mig_match:
            if not gpus:
                raise SmiParseError("MIG device listed before any GPU", line_no)
            migs[-1].append(
                MigDevice(
                    mig_match["profile"],
                    int(mig_match["index"]),
                    mig_match["uuid"].strip() or None,
                    line_no,
                )
            )
            continue
        if is_command_echo(stripped):
            continue
        raise SmiParseError(f"not a line of nvidia-smi -L: {stripped[:80]!r}", line_no)
    if not gpus and not errors:
        raise SmiParseError("no GPU and no error in nvidia-smi -L output")
    listed = tuple(
        ListedGpu(g.index, g.name, g.uuid, g.serial, tuple(m), g.line)
        for g, m in zip(gpus, migs, strict=True)
    )
    return GpuList(listed, tuple(errors))
