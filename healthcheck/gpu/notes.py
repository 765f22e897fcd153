"""Per-GPU not-judged notes, grouped: one line per thing not judged."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
