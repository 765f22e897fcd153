"""sitscheck.kernlog.scan: `scan_file` (chunks searched in C) gives what `scan_lines` (every
line in Python) gives, over a file of many chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sitscheck.kernlog.scan as scan
from sitscheck.contract.registry import discover

OWN_CORPUS = Path(__file__).resolve().parents[1] / "corpus"

REPORT = [
    "[ 5.100000] pcieport 0000:16:01.0: AER: Corrected error message received from 0000:19:00.0",
    "[ 5.100000] nvidia 0000:19:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer,"
    " (Receiver ID)",
    "[ 5.100000] nvidia 0000:19:00.0:   device [10de:2335] error status/mask=00000001/0000e000",
    "[ 5.100000] nvidia 0000:19:00.0:    [ 0] RxErr                  (First)",
]
XID = "[ 6.200000] NVRM: Xid (PCI:0000:19:00): 79, pid=1234, name=python3, GPU has fallen off"
SXID = "[ 6.300000] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 32 MINION"
FILLER = [
    "[ 7.000000] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.",
    "[ 7.000001] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "[ 7.000002] Сен 19 журнал: ünïcödé",
]


def _log(lines: int) -> list[str]:
    out: list[str] = []
    for n in range(lines):
        if n % 1000 == 0:
            out += REPORT
        elif n % 1000 == 500:
            out += [XID, SXID]
        else:
            out.append(FILLER[n % len(FILLER)])
    return out


@pytest.mark.parametrize("newline_at_end", [True, False])
def test_scan_file_gives_what_scan_lines_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline_at_end: bool
) -> None:
    chunk_bytes = 100_003  # lines straddle every chunk boundary
    lines = _log(20_000)
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + ("\n" if newline_at_end else ""))
    assert path.stat().st_size > 10 * chunk_bytes
    interests = scan.declared_interests(discover())
    count, found = scan.scan_file(path, interests, chunk_bytes=chunk_bytes)
    lines_count, lines_found = scan.scan_lines(lines, interests)
    assert count == lines_count
    assert {n: _state(r) for n, r in found.items()} == {
        n: _state(r) for n, r in lines_found.items()
    }
    assert (count, found["pcie_aer"].count, found["xid"].count) == (len(lines), 20, 40)


def _state(value: object) -> object:
    """Everything a handler's result holds, as plain data (tallies have no equality)."""
    if isinstance(value, dict):
        return {repr(k): _state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_state(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(repr(v) for v in value)
    if callable(value) and not hasattr(value, "__dict__") and not hasattr(value, "__slots__"):
        return "callable"
    names = [n for c in type(value).__mro__ for n in getattr(c, "__slots__", ())]
    fields = {n: getattr(value, n) for n in names if hasattr(value, n)}
    fields.update(getattr(value, "__dict__", {}))
    if not fields:
        return value
    return {type(value).__name__: {n: _state(v) for n, v in fields.items() if not callable(v)}}


# A commit message's report, hard-folded at 76 columns: two continuations hold no needle and
# no device prefix ("yer, id=00e0(Receiver ID)", "2000"). tests/corpus/SOURCES.md says whence.
FOLDED = OWN_CORPUS / "aer" / "020-commit-message-folded-76-physical-la-yer-status-mask-split.txt"


def test_a_line_a_wrap_broke_is_read_whole_wherever_a_chunk_ends(tmp_path: Path) -> None:
    """facts.md "aer": a continuation of a fixed-width wrap is one line with the line above it.
    It holds no needle, yet the scan's pre-filter keeps it because it keeps that line, and
    joins the two, wherever a chunk of the file ends (right after the broken line, inside the
    continuation) and over the lines given one by one (`scan_lines`). The sample begins the
    log (its report's header was cut off: the log's first lines are read whatever they hold)
    and the rest is far from it: the pre-filter cuts out single lines."""
    sample = FOLDED.read_text().splitlines()
    expected = json.loads(FOLDED.with_name(FOLDED.stem + ".expected.json").read_text())["events"]
    lines = sample + FILLER * 1000
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + "\n")
    ends = [len("\n".join(sample[: n + 1])) + 1 for n in range(len(sample))]
    interests = scan.declared_interests(discover())
    runs = [scan.scan_lines(lines, interests)]
    for chunk_bytes in (ends[0], ends[2], ends[0] + 5, 100_003):
        runs.append(scan.scan_file(path, interests, worker_from=None, chunk_bytes=chunk_bytes))
    for count, found in runs:
        events = found["pcie_aer"].storm.facts(lambda e: e.to_fact())["events"]
        assert (count, len(events)) == (len(lines), len(expected))
        got = [{key: e[key] for key in want} for e, want in zip(events, expected, strict=True)]
        assert got == expected
