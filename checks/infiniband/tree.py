"""Pure: one reading of /sys/class/infiniband (relative path → text) as HCAs and ports."""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct, field

from .check import IB

_PREFIX = f"{IB}/"


class PortFiles(Struct):
    """One port's files (``state``, ``counters/...``) under its HCA."""

    hca: str
    port: int
    files: dict[str, str | None] = field(default_factory=dict)  # "state", "counters/x"


class HcaFiles(Struct):
    """One HCA's own files (``fw_ver``, ``hw_counters/...``) and its ports."""

    name: str
    files: dict[str, str | None] = field(default_factory=dict)  # "fw_ver", "hw_counters/x"
    ports: dict[int, PortFiles] = field(default_factory=dict)


def split(files: Mapping[str, str | None]) -> dict[str, HcaFiles]:
    """HCAs by name, each with its own files and its ports' files (paths made relative)."""
    hcas: dict[str, HcaFiles] = {}
    for path, text in files.items():
        if not path.startswith(_PREFIX):
            continue
        name, _, rest = path[len(_PREFIX) :].partition("/")
        if not name or not rest:
            continue
        hca = hcas.setdefault(name, HcaFiles(name))
        head, _, tail = rest.partition("/")
        number, _, inner = tail.partition("/")
        if head == "ports" and number.isdigit() and inner:
            port = hca.ports.setdefault(int(number), PortFiles(name, int(number)))
            port.files[inner] = text
        else:
            hca.files[rest] = text
    return dict(sorted(hcas.items(), key=lambda kv: _natural(kv[0])))


def _natural(name: str) -> tuple[str, int]:
    """mlx5_2 before mlx5_10."""
    stem, _, number = name.rpartition("_")
    return (stem, int(number)) if stem and number.isdigit() else (name, -1)
