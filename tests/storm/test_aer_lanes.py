"""A report read at once (`AerLines`'s lanes: its lines held from its header line, its events
made once for each sequence of lines) gives the events of the same lines applied one by one:
random mixes of the real report kinds of `storms.py`, several ports, reports cut off or
interleaved, blocks of several devices under one header, detail lines repeated."""

from __future__ import annotations

import random

from sitscheck.checks.pcie_aer.parse import AerEvent, AerLines
from sitscheck.kernlog.lines import iter_kernel_lines
from storms import DEVICES, PORT, REPORTS, bracket, kmsg, syslog

AER_REPORTS = [make for weight, make in REPORTS if "Xid" not in "".join(make(DEVICES[0]))]
OTHER_PORT = "0000:00:02.0"
FILLER = "EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro"


class LineByLine(AerLines):
    """The reference: every line applied as it comes, no lane."""

    def feed(self, body: str, time: str | None) -> None:
        said = self._said.get(body)
        if said is None:
            said = self._state.remember(body)
        self._apply(said, time)


def events_of(handler_type: type[AerLines], raw: list[str]) -> list[tuple[int, AerEvent]]:
    got: list[tuple[int, AerEvent]] = []
    handler = handler_type(lambda index, event, time: got.append((index, event.at(time))))
    for line in iter_kernel_lines(raw):
        handler.feed(line.body, line.time)
    handler.finish()
    return sorted(got, key=lambda pair: pair[0])


def report(rng: random.Random) -> list[str]:
    lines = rng.choice(AER_REPORTS)(rng.choice(DEVICES))
    shape = rng.random()
    if shape < 0.1:  # another port logged it
        lines = [line.replace(PORT, OTHER_PORT) for line in lines]
    elif shape < 0.2:  # cut off at a random line
        lines = lines[: rng.randint(1, len(lines))]
    elif shape < 0.3 and len(lines) > 1:  # a detail line printed twice
        at = rng.randrange(1, len(lines))
        lines = [*lines[: at + 1], lines[at], *lines[at + 1 :]]
    elif shape < 0.4:  # a second device's block under the same header
        other = rng.choice(DEVICES)
        lines = [*lines, *(line for line in AER_REPORTS[0](other)[1:])]
    return lines


def mixed_log(seed: int) -> list[str]:
    rng = random.Random(seed)
    stamp = rng.choice((bracket, syslog, kmsg))
    lines: list[str] = []
    while len(lines) < rng.randint(1, 400):
        lines += report(rng)
        if rng.random() < 0.3:
            lines.append(FILLER)
    if rng.random() < 0.3:  # two reports' lines interleaved
        at = rng.randrange(len(lines))
        lines[at:at] = report(rng)[::-1]
    return [stamp(step) + line for step, line in enumerate(lines)]


def test_lanes_give_the_events_of_the_lines_applied_one_by_one() -> None:
    for seed in range(300):
        raw = mixed_log(seed)
        assert events_of(AerLines, raw) == events_of(LineByLine, raw), seed


def test_a_port_storm_behind_every_open_header_closes_the_ones_line_by_line_would() -> None:
    """Sixteen ports' reports left open (as many as are held), then a storm of a seventeenth
    port's reports, past the most held behind the oldest open one: its first header closed
    the oldest, so the forced closes go on from the next; a later line of the second port then
    starts a report of its own (found by an adversarial search: the lane had not made room)."""
    ports = [f"0000:00:{n + 2:02x}.0" for n in range(16)]
    lines = [f"pcieport {p}: AER: Corrected error received: 0000:{n + 0x20:02x}:00.0"
             for n, p in enumerate(ports)]  # fmt: skip
    lines += ["pcieport 0000:00:01.0: AER: Corrected error received: 0000:00:06.0"] * 4144
    for tail in (
        f"pcieport {ports[1]}: AER: found no error details for 0000:21:00.0",
        "nvidia 0000:21:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
        "type=Transaction Layer, (Requester ID)",
    ):
        raw = [bracket(step) + line for step, line in enumerate([*lines, tail])]
        assert events_of(AerLines, raw) == events_of(LineByLine, raw), tail


def test_a_storm_of_one_report_is_read_at_once_with_each_reports_own_time() -> None:
    raw = [bracket(n) + line for n in range(2000) for line in AER_REPORTS[0](DEVICES[n % 2])]
    lanes = events_of(AerLines, raw)
    assert lanes == events_of(LineByLine, raw)
    assert [event.time for _, event in lanes] == [bracket(n)[1:-2].strip() for n in range(2000)]
    assert {event.device for _, event in lanes} == set(DEVICES[:2])
    read = AerLines(lambda index, event, time: None)
    for line in iter_kernel_lines(raw):
        read.feed(line.body, line.time)
    # each device's report is one sequence of lines, its events made once
    assert [len(events) for events in read._alone.values() if events] == [1, 1]
