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
from sitscheck.checks.pcie_aer import parse as aer_parse
from sitscheck.checks.pcie_aer.judge import GpuPath, findings, gpu_summary
from sitscheck.checks.pcie_aer.parse import AerEvent, AerLines, parse_aer
from sitscheck.checks.pcie_aer.tally import AerTally
from sitscheck.checks.xid.judge import group_events
from sitscheck.checks.xid.parse import XidLines, parse_xid
from sitscheck.checks.xid.tally import XidTally
from sitscheck.gpu.identity import GpuRef
from sitscheck.kernlog.lines import iter_kernel_lines
from sitscheck.kernlog.storm import MAX_EVENTS
from sitscheck.kernlog.times import span_minutes

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from storms import GPU0, GPU1, STAMPS, storm, tally_of  # noqa: E402

CORRECTED = (
    "[{t:.6f}] pcieport 0000:00:01.0: AER: Corrected error message received from {d}",
    "[{t:.6f}] nvidia {d}: PCIe Bus Error: severity=Correctable, type=Physical Layer,"
    " (Receiver ID)",
    "[{t:.6f}] nvidia {d}:   device [10de:2335] error status/mask=00000001/0000e000",
    "[{t:.6f}] nvidia {d}:    [ 0] RxErr                  (First)",
)
FATAL = (
    "[{t:.6f}] pcieport 0000:00:01.0: DPC: containment event, status:0x000d, ERR_FATAL"
    " received from {d}"
)


def corrected_storm(reports: int, fatal_every: int = 0) -> list[str]:
    """`reports` corrected reports on two GPUs, a fatal containment every `fatal_every`."""
    lines: list[str] = []
    for n in range(reports):
        device = GPU0 if n % 2 else GPU1
        if fatal_every and n % fatal_every == fatal_every - 1:
            lines.append(FATAL.format(t=n * 0.5, d=device))
        else:
            lines.extend(row.format(t=n * 0.5, d=device) for row in CORRECTED)
    return lines


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


def _reference(items: list[aer_parse._Item]) -> list[str]:
    for index, draft in enumerate(items):
        if isinstance(draft, AerEvent):
            continue
        wanted = ("nonfatal", "fatal") if draft.severity == aer_parse._UNCORRECTABLE else None
        found = _nearest(items, index, wanted)
        if found is not None:
            draft.severity = found
        else:
            draft.severity = (
                "nonfatal" if draft.severity == aer_parse._UNCORRECTABLE else "corrected"
            )
    return [item.severity or "" for item in items]


def _nearest(
    items: list[aer_parse._Item], index: int, wanted: tuple[str, ...] | None
) -> str | None:
    device = items[index].device
    if device is None:
        return None
    known = ("corrected", "nonfatal", "fatal") if wanted is None else wanted
    for distance in range(1, len(items)):
        for other in (index + distance, index - distance):
            if 0 <= other < len(items):
                candidate = items[other]
                if candidate.device == device and candidate.severity in known:
                    return candidate.severity
    return None


def _random_items(rng: random.Random, n: int) -> list[aer_parse._Item]:
    items: list[aer_parse._Item] = []
    for _ in range(n):
        device = rng.choice(("0000:01:00.0", "0000:02:00.0", "0000:03:00.0", None))
        severity = rng.choice(("corrected", "nonfatal", "fatal", None, aer_parse._UNCORRECTABLE))
        items.append(
            aer_parse._item(None, None, device, None, severity, None, False, None, (), False, {})
        )
    return items


def test_draft_severities_are_settled_as_the_whole_list_settled_them() -> None:
    for seed in range(400):
        rng = random.Random(seed)
        items = _random_items(rng, rng.randint(1, 40))
        rng = random.Random(seed)
        again = _random_items(rng, rng.randint(1, 40))  # the same, for the reference to settle
        got: dict[int, str] = {}
        resolver = aer_parse._Resolver(
            lambda index, event, time, got=got: got.__setitem__(index, event.severity)
        )
        for item in items:
            resolver.push(item, None)
        resolver.finish()
        assert [got[i] for i in range(len(items))] == _reference(again), seed


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
        assert len(handler._state.slots) <= aer_parse._MAX_HELD + aer_parse._FLUSH_EVERY + 1
    tally = handler.finish()
    assert tally is not None and tally.count == 10_001
    assert tally.uncorrected[("fatal", GPU0)].count == 1
