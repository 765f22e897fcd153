"""A storm's reports counted at once (`_Resolver.push_done`, `AerTally.add_run`) give the
tally of the same events counted one by one: the storm facts (the first events, the count,
every group with its first and last time), each device's counts and corrected-time span,
and each uncorrectable group's count, errors and excerpt. Logs past the first 1,000 events
(where runs are counted at once), of interleaved devices and report kinds, with drafts whose
severity later reports decide, DPC containments, cut-off reports and stamps that read as no
point in time."""

from __future__ import annotations

from typing import Any

import pytest
from sitscheck.checks.pcie_aer.tally import AerTally
from storms import AER_REPORTS, DEVICES, bracket, storm_log, tally_of
from test_aer_lanes import LineByLine


def state(tally: AerTally) -> dict[str, Any]:
    storm = tally.storm
    return {
        "facts": storm.facts(lambda event: event.to_fact()),
        "groups": {
            key: (g.count, g.first, g.last, g.first_at, g.last_at, g.earliest, g.latest)
            for key, g in storm.groups.items()
        },
        "buses": {
            bus: (b.by_severity, b.containments, b.corrected, b.timed, b.earliest, b.latest)
            for bus, b in tally.buses.items()
        },
        "uncorrected": {
            key: (g.count, g.contained, sorted(g.errors), [(i, e.to_fact()) for i, e in g.first])
            for key, g in tally.uncorrected.items()
        },
    }


@pytest.mark.parametrize(
    "seeds",
    [
        pytest.param(range(0, 6), id="6-storms"),
        pytest.param(range(6, 60), id="54-more-storms", marks=pytest.mark.slow),
    ],
)
def test_a_storm_counted_at_once_is_the_storm_counted_one_by_one(seeds: range) -> None:
    for seed in seeds:
        raw = storm_log(seed)
        at_once = tally_of(raw)
        assert at_once.storm.count > 1000, seed
        assert state(at_once) == state(tally_of(raw, LineByLine)), seed


def test_one_report_over_and_over_is_counted_in_runs() -> None:
    """The benchmark's shape: one corrected report of a device, 5,000 times; counted at once
    (the groups' times are the first and last report's, the span every report's)."""
    raw = [bracket(n) + line for n in range(5000) for line in AER_REPORTS[0](DEVICES[0])]
    at_once = tally_of(raw)
    assert state(at_once) == state(tally_of(raw, LineByLine))
    (group,) = at_once.storm.groups.values()
    assert (group.count, group.first_at, group.last_at) == (5000, 0, 4999)
    assert (group.earliest, group.latest) == (5.0, float(bracket(4999)[1:-2]))


# status lines alone: a severity the reports around them decide (the latest of any kind, or
# the latest uncorrectable one for an uncorrectable status bit)
STATUS_ALONE = (
    "nvidia 0000:00:06.0:   device [10de:2335] error status/mask=00000001/00000000",
    "nvidia 0000:00:06.0:   device [10de:2335] error status/mask=00000040/00000000",
)


def test_a_draft_after_interleaved_runs_takes_the_latest_report_of_its_device() -> None:
    """Corrected and non-fatal reports of one device in turn (two runs pushed together),
    then a report whose severity the log must decide: decided as one by one, whichever kind
    came last (the report before it is the one its line joins the lane of: it is applied
    line by line, after the runs)."""
    from storms import GPU0, _corrected, _nonfatal

    assert GPU0 in STATUS_ALONE[0]
    for kinds in ((_corrected, _nonfatal), (_nonfatal, _corrected)):
        for count in (1200, 1201):
            for tail in STATUS_ALONE:
                lines = [line for n in range(count) for line in kinds[n % 2](GPU0)]
                raw = [bracket(step) + line for step, line in enumerate([*lines, tail])]
                at_once = tally_of(raw)
                assert state(at_once) == state(tally_of(raw, LineByLine)), (count, tail)


def test_a_draft_of_a_device_read_only_in_runs_takes_its_latest_report() -> None:
    """Two report kinds of one device in turn, each report followed by another device's (read
    at once: the first device's reports are known only from runs), then a report of the
    first device whose severity the log must decide ("found no error details"): decided by
    its latest report, as one by one, whichever kind came last (fails when a run leaves its
    device's first run's report as the latest known)."""
    from storms import GPU0, GPU1, PORT, _corrected, _dpc_fatal, _nonfatal

    no_details = f"pcieport {PORT}: AER: found no error details for {GPU0}"
    for kinds, tail in (
        ((_corrected, _nonfatal), no_details),
        ((_nonfatal, _corrected), no_details),
        ((_nonfatal, _dpc_fatal), no_details),
        ((_dpc_fatal, _nonfatal), no_details),
    ):
        for count in (1200, 1201):
            lines = [
                line for n in range(count) for line in (*kinds[n % 2](GPU0), *_corrected(GPU1))
            ]
            raw = [bracket(step) + line for step, line in enumerate([*lines, tail])]
            at_once = tally_of(raw)
            assert state(at_once) == state(tally_of(raw, LineByLine)), (count, kinds)
