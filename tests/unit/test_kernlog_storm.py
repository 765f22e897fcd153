"""Error storms in bounded facts (facts.md "Storms"): the first 1,000 events, all counted."""

from __future__ import annotations

from sitscheck.checks.pcie_aer.parse import AerEvent
from sitscheck.checks.pcie_aer.tally import aer_events
from sitscheck.checks.xid.parse import XidEvent
from sitscheck.checks.xid.tally import xid_events
from sitscheck.kernlog.storm import MAX_EVENTS, normalised


def aer(n: int, device: str = "0000:19:00.0", severity: str = "corrected") -> AerEvent:
    return AerEvent(
        reporter="0000:16:01.0",
        device=device,
        vendor_device="10de:2335",
        severity=severity,  # type: ignore[arg-type]
        type="Physical Layer",
        errors=("RxErr",),
        multiple=False,
        time=f"{100 + n}.000001",
    )


def test_a_storm_keeps_the_first_thousand_and_counts_every_event() -> None:
    events = [aer(n) for n in range(5000)] + [aer(5000, severity="fatal")]
    bounded = aer_events(events)
    facts = bounded.facts(lambda e: e.to_fact())
    assert facts["event_count"] == 5001
    assert facts["events"] == [e.to_fact() for e in events[:MAX_EVENTS]]
    assert facts["groups"] == [
        {
            "device": "0000:19:00.0",
            "severity": "corrected",
            "type": "Physical Layer",
            "errors": ["RxErr"],
            "count": 5000,
            "first": 100.000001,
            "last": 5099.000001,
        },
        {
            "device": "0000:19:00.0",
            "severity": "fatal",
            "type": "Physical Layer",
            "errors": ["RxErr"],
            "count": 1,
            "first": 5100.000001,
            "last": 5100.000001,
        },
    ]


def test_below_a_thousand_events_is_the_whole_list_and_groups_add_up() -> None:
    events = [aer(n, device=f"0000:{n % 3:02x}:00.0") for n in range(10)]
    facts = aer_events(events).facts(lambda e: e.to_fact())
    assert facts["events"] == [e.to_fact() for e in events]
    assert sum(g["count"] for g in facts["groups"]) == 10  # type: ignore[misc,index]
    assert len(facts["groups"]) == 3  # type: ignore[arg-type]


def test_xid_groups_are_per_device_xid_and_sxid() -> None:
    def xid(code: int | None, sxid: int | None, time: str | None) -> XidEvent:
        return XidEvent("0000:3b:00.0", code, sxid, None, None, "m", time)

    facts = xid_events(
        [xid(79, None, "Fri Aug 30 11:43:09 2024"), xid(None, 11012, None), xid(79, None, None)]
    ).facts(lambda e: e.to_fact())
    assert facts["groups"] == [
        {"device": "0000:3b:00.0", "xid": 79, "sxid": None, "count": 2,
         "first": "2024-08-30T11:43:09", "last": None},
        {"device": "0000:3b:00.0", "xid": None, "sxid": 11012, "count": 1,
         "first": None, "last": None},
    ]  # fmt: skip


def test_times_are_seconds_since_boot_or_iso_or_null() -> None:
    assert normalised("68183.615790") == 68183.61579
    assert normalised("2024-08-30T11:43:09.123456+0000") == "2024-08-30T11:43:09.123456+00:00"
    assert normalised("Sep 19 16:18:02") is None  # no year: no point in time
    assert normalised("+0.000316") is None
    assert normalised(None) is None


def test_events_added_out_of_order_give_the_facts_of_log_order() -> None:
    """A parser settles some events later than the ones after them (`add(event, index)`)."""
    events = [aer(n, device=f"0000:{n % 3:02x}:00.0", severity=("corrected", "fatal")[n % 2])
              for n in range(2500)]  # fmt: skip
    in_order = aer_events(events).facts(lambda e: e.to_fact())
    shuffled = aer_events()
    order = list(range(len(events)))
    order[5:1500] = reversed(order[5:1500])  # the first groups' first events come late
    for index in order:
        shuffled.add(events[index], index)
    assert shuffled.facts(lambda e: e.to_fact()) == in_order
    assert len(in_order["events"]) == MAX_EVENTS  # type: ignore[arg-type]
