"""The AER differential: what the parser (`parse_aer`) and the check's tally (`AerLines`)
made of each input when `recorded/aer.txt` was written, one block per input.

The inputs: every kernel-log sample of the corpus (`tests/corpus/**/*.txt`, read as the scan
reads them: wrapped lines joined), the random report mixes and storms of `storms.py` (the
seeds the lane and run tests of the parser before it was rewritten used), the streaming
tests' storms, `storms.storm` in each time form, and a slice of the benchmark's AER storm
(`benchmarks.synth.storm_log`).

A block is the input's name, then its events in log order (`event` lines: the facts and
whether it is a DPC containment; past `WHOLE` events the first `FIRST`, the count and a digest
of all), then the tally the judges read (`tally`: the storm facts' digest and count, every
group with its count, first and last time and place and time span, every device's counts, and
every uncorrectable group with its excerpt).

It was written by the parser before the rewrite of issue 31 (lanes, runs and shared events
gone); the rewrite gives the same blocks. To write it again (only where a change of facts is
meant, then read the diff):

    python tests/storm/aer_recorded.py
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
for extra in (HERE, ROOT):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from sitscheck.checks.pcie_aer.tally import AerTally  # noqa: E402
from storms import (  # noqa: E402
    AER_REPORTS,
    DEVICES,
    GPU0,
    GPU1,
    PORT,
    STAMPS,
    _corrected,
    _dpc_fatal,
    _nonfatal,
    bracket,
    corrected_storm,
    mixed_log,
    storm,
    storm_log,
    tally_of,
)

RECORDED = HERE / "recorded" / "aer.txt"
CORPUS = HERE.parent / "corpus"
WHOLE = 40  # events written whole; past them, the first `FIRST`, the count and a digest
FIRST = 10
MIXES = 300  # `storms.mixed_log` seeds
MIXES_WHOLE = 50  # of them, written whole; the others as the digests of their events and tally
STORMS = 12  # `storms.storm_log` seeds
SYNTH_MB = 2  # of the benchmark's storm

Input = Callable[[], list[str]]  # -> the raw lines of the log
Kind = Callable[[str], list[str]]  # a report kind of `storms.py`: device -> its lines


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _said(fact: dict[str, Any]) -> dict[str, Any]:
    """An event's facts less the keys at their empty value (null, false, no errors)."""
    return {key: value for key, value in fact.items() if value not in (None, False, [])}


def record(raw: list[str], whole: bool = True) -> list[str]:
    """The block of one log: its events, then its tally (unless not `whole`: the count and
    digest of each)."""
    from sitscheck.checks.pcie_aer.parse import parse_aer
    from sitscheck.kernlog.lines import iter_kernel_lines

    events = [
        _said({**event.to_fact(), "containment": event.containment})
        for event in parse_aer(iter_kernel_lines(raw))
    ]
    shown = (events if len(events) <= WHOLE else events[:FIRST]) if whole else []
    out = [f"events {len(events)}" + (f" digest {digest(events)}" if events != shown else "")]
    out += ["event " + _line(event) for event in shown]
    return out + _tally(raw, whole)


def _tally(raw: list[str], whole: bool) -> list[str]:
    tally = tally_of(raw)
    storm_facts = tally.storm.facts(lambda event: event.to_fact())
    out = [f"tally {tally.storm.count} facts {digest(storm_facts)}"]
    if not whole:
        return [*out, f"counts {digest(_tally_lines(tally))}"]
    return out + _tally_lines(tally)


def _tally_lines(tally: AerTally) -> list[str]:
    out = []
    for key, g in tally.storm.groups.items():
        out.append(
            "group "
            + _line(
                [list(key), g.count, g.first, g.last, g.first_at, g.last_at, g.earliest, g.latest]
            )
        )
    for bus, b in tally.buses.items():
        out.append(
            "bus "
            + _line(
                [bus, b.by_severity, b.containments, b.corrected, b.timed, b.earliest, b.latest]
            )
        )
    for (severity, bus), u in tally.uncorrected.items():
        excerpt = [[index, _said(event.to_fact())] for index, event in u.first]
        out.append(
            "uncorrectable "
            + _line([severity, bus, u.count, u.contained, sorted(u.errors), excerpt])
        )
    return out


def _sample(path: Path) -> Input:
    def read() -> list[str]:
        from sitscheck.kernlog.lines import unwrap_lines

        return list(unwrap_lines(path.read_text(errors="replace").splitlines()))

    return read


def _stamped(lines: list[str]) -> list[str]:
    return [bracket(step) + line for step, line in enumerate(lines)]


def _draft_after_runs(kinds: tuple[Kind, Kind], count: int, tail: str) -> Input:
    """Two report kinds of one device in turn, then a line whose severity the log decides."""
    return lambda: _stamped([*(line for n in range(count) for line in kinds[n % 2](GPU0)), tail])


def _draft_in_runs(kinds: tuple[Kind, Kind], count: int) -> Input:
    """The same, each report followed by another device's, the tail a "no details" note."""
    tail = f"pcieport {PORT}: AER: found no error details for {GPU0}"
    return lambda: _stamped(
        [
            *(line for n in range(count) for line in (*kinds[n % 2](GPU0), *_corrected(GPU1))),
            tail,
        ]
    )


def _port_storm(tail: str) -> Input:
    """Sixteen ports' reports left open, then a storm of a seventeenth port's, then `tail`."""
    ports = [f"0000:00:{n + 2:02x}.0" for n in range(16)]
    lines = [
        f"pcieport {p}: AER: Corrected error received: 0000:{n + 0x20:02x}:00.0"
        for n, p in enumerate(ports)
    ]
    lines += ["pcieport 0000:00:01.0: AER: Corrected error received: 0000:00:06.0"] * 4144
    return lambda: _stamped([*lines, tail])


def _streaming(reports: int, fatal_every: int, open_first: bool = False) -> Input:
    def read() -> list[str]:
        lines = corrected_storm(reports, fatal_every)
        if open_first:  # a fatal header whose detail never comes, then the storm
            head = "[0.000000] pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: "
            lines = [head + GPU0, *lines]
        return lines

    return read


def _held_open(reports: int) -> Input:
    """A fatal header whose details never come, `reports` corrected reports of another port,
    then that header's own "no details" note: part of it while it is held open, a report of
    its own once it was closed (`reports.MAX_HELD` reports held behind it)."""

    def read() -> list[str]:
        head = f"pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: {GPU1}"
        note = f"pcieport 0000:00:02.0: AER: found no error details for {GPU1}"
        return _stamped([head, *(line for _ in range(reports) for line in _corrected(GPU0)), note])

    return read


def _open_headers(ports: int) -> Input:
    """Headers of `ports` ports whose details never come, then the first one's "no details"
    note (a report of its own once more headers are open than are kept)."""

    def read() -> list[str]:
        heads = [
            f"pcieport 0000:00:{n + 2:02x}.0: AER: Uncorrected (Non-Fatal) error received: "
            f"0000:{n + 0x20:02x}:00.0"
            for n in range(ports)
        ]
        return _stamped([*heads, "pcieport 0000:00:02.0: AER: found no error details for "
                         "0000:20:00.0"])  # fmt: skip

    return read


def _two_domains() -> list[str]:
    """A block joins the newest open header of its own PCI domain."""
    return _stamped(
        [
            "pcieport 0001:00:01.0: AER: Corrected error received: 0001:01:00.0",
            "pcieport 0000:00:01.0: AER: Corrected error received: 0000:02:00.0",
            "nvidia 0001:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
            "(Receiver ID)",
            "nvidia 0001:01:00.0:    [ 0] RxErr                  (First)",
        ]
    )


def _cper_records(records: int) -> Input:
    """`records` firmware-first records begun, then each one's device line (a record no
    longer kept begins again: its section gets no device)."""

    def read() -> list[str]:
        lines = []
        for n in range(1, records + 1):
            lines += [
                f"{{{n}}}[Hardware Error]: Hardware error from APEI Generic Hardware Error "
                f"Source: {n}",
                f"{{{n}}}[Hardware Error]: event severity: fatal",
                f"{{{n}}}[Hardware Error]:  Error 0, type: fatal",
                f"{{{n}}}[Hardware Error]:   section_type: PCIe error",
            ]
        lines += [
            f"{{{n}}}[Hardware Error]:   device_id: 0000:{n:02x}:00.0"
            for n in range(1, records + 1)
        ]
        return _stamped(lines)

    return read


def _sections_waiting(sections: int) -> Input:
    """`sections` CPER sections of one device, then the kernel's print of each (a print
    joins the oldest section still waiting; only the last `MAX_OPEN_RECORDS` wait)."""

    def read() -> list[str]:
        lines = []
        for n in range(sections):
            lines += [
                "{1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1",
                "{1}[Hardware Error]: event severity: recoverable",
                "{1}[Hardware Error]:   section_type: PCIe error",
                f"{{1}}[Hardware Error]:   device_id: {GPU0}",
                f"{{1}}[Hardware Error]:   vendor_id: 0x10de, device_id: 0x{n:04x}",
            ]
        lines += [
            f"nvidia {GPU0}: AER: aer_status: 0x{1 << (n % 24):08x}, aer_mask: 0x00000000"
            for n in range(sections)
        ]
        return _stamped(lines)

    return read


def _file(make: Callable[[Path], object]) -> Input:
    def read() -> list[str]:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "kern.log"
            make(path)
            return path.read_text().splitlines()

    return read


def _synth(path: Path) -> None:
    from benchmarks.synth import storm_log as synth_storm

    synth_storm(path, SYNTH_MB)


def inputs() -> dict[str, Input]:
    """Every input by name, nothing read yet."""
    out: dict[str, Input] = {}
    for sample in sorted(CORPUS.rglob("*.txt")):
        out[f"corpus/{sample.relative_to(CORPUS)}"] = _sample(sample)
    for seed in range(MIXES):
        out[f"mixed/{seed}"] = lambda seed=seed: mixed_log(seed)
    for seed in range(STORMS):
        out[f"storm_log/{seed}"] = lambda seed=seed: storm_log(seed)
    for stamp, make in STAMPS.items():
        out[f"storm/{stamp}"] = _file(lambda path, make=make: storm(path, 3000, make))
    out[f"synth/storm-{SYNTH_MB}mb"] = _file(_synth)
    one = AER_REPORTS[0]
    out["one-report/2000-two-devices"] = lambda: _stamped(
        [line for n in range(2000) for line in one(DEVICES[n % 2])]
    )
    out["one-report/5000"] = lambda: _stamped(
        [line for _ in range(5000) for line in one(DEVICES[0])]
    )
    out["port-storm/no-details"] = _port_storm(
        "pcieport 0000:00:03.0: AER: found no error details for 0000:21:00.0"
    )
    out["port-storm/bus-error"] = _port_storm(
        "nvidia 0000:21:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)"
    )
    status_alone = (
        "nvidia 0000:00:06.0:   device [10de:2335] error status/mask=00000001/00000000",
        "nvidia 0000:00:06.0:   device [10de:2335] error status/mask=00000040/00000000",
    )
    for first, second in ((_corrected, _nonfatal), (_nonfatal, _corrected)):
        for count in (1200, 1201):
            for number, tail in enumerate(status_alone):
                name = f"draft-after-runs/{first.__name__}-{count}-{number}"
                out[name] = _draft_after_runs((first, second), count, tail)
    for first, second in (
        (_corrected, _nonfatal),
        (_nonfatal, _corrected),
        (_nonfatal, _dpc_fatal),
        (_dpc_fatal, _nonfatal),
    ):
        for count in (1200, 1201):
            name = f"draft-in-runs/{first.__name__}-{second.__name__}-{count}"
            out[name] = _draft_in_runs((first, second), count)
    for reports in (4000, 4030, 4090, 4100, 4160, 4300):
        out[f"edges/held-open-{reports}"] = _held_open(reports)
    for ports in (15, 16, 17):
        out[f"edges/open-headers-{ports}"] = _open_headers(ports)
    out["edges/two-domains"] = _two_domains
    for records in (15, 16, 17):
        out[f"edges/cper-records-{records}"] = _cper_records(records)
        out[f"edges/sections-waiting-{records}"] = _sections_waiting(records)
    out["streaming/5000-fatal-every-50"] = _streaming(5000, 50)
    out["streaming/3000-fatal-every-7"] = _streaming(3000, 7)
    out["streaming/open-header-then-10000"] = _streaming(10_000, 0, open_first=True)
    return out


def whole(name: str) -> bool:
    """Whether the input's block is written whole (all but the later random mixes)."""
    family, _, number = name.partition("/")
    return family != "mixed" or int(number) < MIXES_WHOLE


def read_recorded(path: Path = RECORDED) -> dict[str, list[str]]:
    """The blocks of the recorded file, by input name."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("== "):
            current = blocks[line[3:]] = []
        elif line:
            current.append(line)
    return blocks


def write(path: Path = RECORDED) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for name, read in inputs().items():
            out.write(f"== {name}\n")
            out.writelines(line + "\n" for line in record(read(), whole(name)))
            out.write("\n")


if __name__ == "__main__":
    write()
