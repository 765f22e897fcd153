"""Error storms streamed: every event counted, 1,000 kept, the judges' tallies equal to what the
whole list gives, draft severities settled exactly as the list-at-the-end algorithm did, and
the handlers' memory not growing with the number of events."""

from __future__ import annotations

import gc
import random
import sys
import tracemalloc
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from sitscheck.checks.pcie_aer.judge import GpuPath, findings, gpu_summary
from sitscheck.checks.pcie_aer.parse import AerLines, parse_aer
from sitscheck.checks.pcie_aer.reports import FLUSH_EVERY, MAX_HELD
from sitscheck.checks.pcie_aer.resolve import KNOWN, Draft, Resolver
from sitscheck.checks.pcie_aer.tally import AerTally
from sitscheck.checks.pcie_aer.wordings import UNCORRECTABLE
from sitscheck.checks.xid.judge import group_events
from sitscheck.checks.xid.parse import XidLines, parse_xid
from sitscheck.checks.xid.tally import XidTally
from sitscheck.gpu.identity import GpuRef
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.kernlog.storm import MAX_EVENTS
from sitscheck.kernlog.times import seconds

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from storms import GPU0, GPU1, STAMPS, corrected_storm, storm, tally_of  # noqa: E402


def span_minutes(times: list[str | None]) -> float | None:
    """The reference: minutes between the first and last time that reads as seconds; None
    when fewer than two do."""
    values = [v for v in (seconds(t) for t in times) if v is not None]
    return (max(values) - min(values)) / 60.0 if len(values) >= 2 else None


def paths() -> list[GpuPath]:
    return [
        GpuPath(GpuRef(index, bus, "NVIDIA H200"), ["0000:00:01.0", bus])
        for index, bus in enumerate((GPU0, GPU1))
    ]


def test_a_storm_of_5000_counts_all_keeps_1000_and_groups_add_up() -> None:
    tally = tally_of(corrected_storm(5000, fatal_every=50))
    facts = tally.storm.facts(lambda e: e.to_fact())
    assert facts["event_count"] == 5000 == tally.count
    events = facts["events"]
    assert isinstance(events, list) and len(events) == MAX_EVENTS
    groups = facts["groups"]
    assert isinstance(groups, list)
    assert sum(g["count"] for g in groups) == 5000
    written = Counter(
        (GPU0 if n % 2 else GPU1, "fatal" if n % 50 == 49 else "corrected") for n in range(5000)
    )
    assert Counter({(g["device"], g["severity"]): g["count"] for g in groups}) == written
    assert events[0]["time"] == "0.000000" and events[-1]["time"] == f"{999 * 0.5:.6f}"


def test_the_streamed_judgement_is_that_of_the_whole_list() -> None:
    lines = corrected_storm(3000, fatal_every=7)
    whole = parse_aer(iter_kernel_lines(lines))  # every event, in order
    tally = tally_of(lines)
    assert tally.storm.facts(lambda e: e.to_fact()) == AerTally.of(whole).storm.facts(
        lambda e: e.to_fact()
    )
    for path in paths():
        summary = gpu_summary(path, tally)
        ids = set(path.ports)
        mine = [e for e in whole if (e.device or e.reporter) in ids]
        corrected = [e for e in mine if e.severity == "corrected"]
        assert summary["events"] == {
            s: sum(1 for e in mine if e.severity == s) for s in ("corrected", "nonfatal", "fatal")
        }
        assert summary["containments"] == sum(1 for e in mine if e.containment) > 0
        span = span_minutes([e.time for e in corrected])
        assert span is not None
        assert summary["corrected_per_min"] == round(len(corrected) / max(span, 1.0), 3)
    raised = findings(paths(), tally, "dmesg")
    assert [f.code for f in raised] == ["pcie_aer.uncorrected_fatal"] * 2
    for finding, bus in zip(raised, (GPU0, GPU1), strict=True):
        fatal = [e for e in whole if e.severity == "fatal" and e.device == bus]
        assert finding.message.startswith(f"{len(fatal)} uncorrectable (fatal) AER report(s)")
        excerpt = finding.evidence[0].excerpt or ""
        assert excerpt.splitlines()[0].startswith(f"{fatal[0].time} fatal DPC containment")
        assert excerpt.splitlines()[-1] == f"... and {len(fatal) - 5} more"
        assert len(excerpt.splitlines()) == 6


def test_xid_groups_streamed_are_those_of_the_whole_list(tmp_path: Path) -> None:
    path = tmp_path / "storm.log"
    storm(path, 3000, STAMPS["bracket"])
    lines = path.read_text().splitlines()
    whole = parse_xid(iter_kernel_lines(lines))
    handler = XidLines()
    for line in iter_kernel_lines(lines):
        handler.feed(line.body, line.time)
    tally = handler.finish()
    assert tally is not None and tally.count == len(whole) > MAX_EVENTS // 2
    assert tally.storm.facts(lambda e: e.to_fact()) == XidTally.of(whole).storm.facts(
        lambda e: e.to_fact()
    )
    groups = group_events(tally)
    assert sum(g.count for g in groups) == len(whole)
    for group in groups:
        members = [
            e
            for e in whole
            if e.device == group.device
            and (e.sxid if group.kind == "sxid" else (e.xid or 79)) == group.code
            and (e.sxid is not None) == (group.kind == "sxid")
        ]
        assert group.count == len(members)
        assert group.first == members[:3] and group.last == members[-1]


# -- draft severities: the algorithm that ran over the whole list at the end, kept as the
# reference (the code before the streaming change, checks/pcie_aer/parse.py)

Item = tuple[
    str | None, str | None
]  # a report's device and severity (None, UNCORRECTABLE: a draft)


def _reference(items: list[Item]) -> list[str]:
    settled = [severity for _, severity in items]
    for index, (device, severity) in enumerate(items):
        if severity in KNOWN:
            continue
        wanted = ("nonfatal", "fatal") if severity == UNCORRECTABLE else None
        found = _nearest(items, settled, index, device, wanted)
        if found is None:
            found = "nonfatal" if severity == UNCORRECTABLE else "corrected"
        settled[index] = found
    return [severity or "" for severity in settled]


def _nearest(
    items: list[Item],
    settled: list[str | None],
    index: int,
    device: str | None,
    wanted: tuple[str, ...] | None,
) -> str | None:
    if device is None:
        return None
    known = ("corrected", "nonfatal", "fatal") if wanted is None else wanted
    for distance in range(1, len(items)):
        for other in (index + distance, index - distance):
            if 0 <= other < len(items):
                if items[other][0] == device and settled[other] in known:
                    return settled[other]
    return None


def _random_items(rng: random.Random, n: int) -> list[Item]:
    devices = ("0000:01:00.0", "0000:02:00.0", "0000:03:00.0", None)
    severities = ("corrected", "nonfatal", "fatal", None, UNCORRECTABLE)
    return [(rng.choice(devices), rng.choice(severities)) for _ in range(n)]


def test_draft_severities_are_settled_as_the_whole_list_settled_them() -> None:
    for seed in range(400):
        rng = random.Random(seed)
        items = _random_items(rng, rng.randint(1, 40))
        got: dict[int, str] = {}
        resolver = Resolver(lambda index, event, got=got: got.__setitem__(index, event.severity))
        for device, severity in items:
            resolver.push(Draft(None, None, device, None, severity, None, False, None, (), False))
        resolver.finish()
        assert [got[i] for i in range(len(items))] == _reference(items), seed


# -- memory: what a handler holds does not grow with the events it was fed


def _held_by(handler: AerLines | XidLines, raw: Iterable[str]) -> int:
    """Bytes the handler still holds once it has been fed every line of `raw`."""
    lines = list(iter_kernel_lines(raw))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:
            handler.feed(line.body, line.time)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _held_after(feed: int) -> int:
    return _held_by(AerLines(), corrected_storm(feed, fatal_every=9))


@pytest.mark.slow  # 55,000 reports, each handler
def test_the_aer_handler_holds_the_same_for_5k_and_50k_reports() -> None:
    small, large = _held_after(5_000), _held_after(50_000)
    assert large - small < 64 * 1024, (small, large)


def _xid_held_after(feed: int) -> int:
    return _held_by(
        XidLines(),
        (
            f"[{n * 0.5:.6f}] NVRM: Xid (PCI:0000:0{n % 4}:00): {(13, 31, 79)[n % 3]}, pid={n}, "
            "name=python3, Graphics SM Warp Exception"
            for n in range(feed)
        ),
    )


@pytest.mark.slow  # 55,000 reports, each handler
def test_the_xid_handler_holds_the_same_for_5k_and_50k_reports() -> None:
    small, large = _xid_held_after(5_000), _xid_held_after(50_000)
    assert large - small < 64 * 1024, (small, large)


def test_a_report_held_open_while_thousands_pass_is_closed_and_memory_stays_bounded() -> None:
    """A fatal header of one port whose detail never comes, then a corrected storm from
    another port: the open header would keep every later report waiting behind it."""
    open_one = "[0.000000] pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: " + GPU0
    handler = AerLines()
    for line in iter_kernel_lines([open_one, *corrected_storm(10_000)]):
        handler.feed(line.body, line.time)
        assert len(handler._reports.slots) <= MAX_HELD + FLUSH_EVERY + 1
    tally = handler.finish()
    assert tally is not None and tally.count == 10_001
    assert tally.uncorrected[("fatal", GPU0)].count == 1
