"""Pure: a run's report against the previous daemon run's state.

- Each finding (any severity) and each verdict that is not ok (warning, critical or unknown)
  is marked `new` or `persisting`, with `since` (when first seen). It is `new` when the last
  run did not have it, when it got worse (warning → critical), or when it turned from unknown
  to judged or back; otherwise `persisting`, keeping its first-seen time.
- Findings made only of kernel-log evidence are *events*: when the log was read from a cursor
  (only lines new since the last run), every such finding is made of new events and is `new`.
  An event finding that is absent later is not "cleared": no new events is not a recovery.
- A warning or critical finding or verdict of the last run that is absent now, where the thing
  that raised it was judged this run, is reported once in `Report.cleared` and forgotten.
  Where it was not judged (its check errored, timed out, was skipped or not selected; its
  verdict is unknown or missing) it is carried over unchanged, for up to `CARRY_LIMIT`.
- Cumulative counters (metrics with unit `{error}` — AER, PCIe replay, ECC, NVLink error
  counts — and retired pages / remapped rows) get a `CounterDelta` against their last value:
  `delta` is the increase; a counter that went down (or any counter after a reboot) restarted,
  so `reset` is set and `delta` is its value; with no earlier value `delta` is None.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from msgspec import Struct
from msgspec.structs import replace

from ..models import (
    CheckResult,
    Cleared,
    CounterDelta,
    Device,
    Finding,
    Metric,
    Report,
    Status,
    Verdict,
)
from .state import CounterValue, DaemonState, TrackedItem

CARRY_LIMIT = timedelta(days=7)
_TRACKED_VERDICTS = (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
_FIRED = (Status.WARNING, Status.CRITICAL)
_JUDGED = (Status.OK, Status.WARNING, Status.CRITICAL)


class Marked(Struct, frozen=True):
    """The marked report and what the state keeps for the next run."""

    report: Report
    items: list[TrackedItem]
    counters: list[CounterValue]


def is_cumulative(metric: Metric) -> bool:
    """A counter as its check declared it (`MetricSpec.kind`)."""
    return metric.kind == "counter"


def is_event_finding(finding: Finding) -> bool:
    """An event (an Xid, an AER report) as its code's declaration says (`CodeSpec.kind`)."""
    return finding.kind == "event"


def stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def _device_key(device: Device | None) -> str:
    if device is None:
        return "-|-"
    index = "-" if device.index is None else str(device.index)
    return f"{index}|{device.pci_bus_id or '-'}"


def finding_key(check: str, finding: Finding) -> str:
    return f"finding|{check}|{finding.code}|{_device_key(finding.device)}"


def verdict_key(verdict: Verdict) -> str:
    return f"verdict|{verdict.rule}|{_device_key(verdict.device)}"


def counter_key(check: str, metric: Metric) -> str:
    return f"{check}|{metric.name}|{json.dumps(metric.labels, sort_keys=True)}"


def mark_report(
    report: Report,
    previous: DaemonState | None,
    now: datetime,
    *,
    boot_id: str | None = None,
    events_windowed: bool = False,
    carry_limit: timedelta = CARRY_LIMIT,
) -> Marked:
    """Mark `report` against `previous`; `events_windowed`: the kernel log was read from a
    cursor, so kernel-log findings hold only new events."""
    marker = _Marker(previous, stamp(now), events_windowed)
    checks = [marker.check(result) for result in report.checks]
    verdicts = [marker.verdict(verdict) for verdict in report.verdicts]
    cleared = marker.close(report, now, carry_limit)
    deltas, counters = _counters(report, previous, now, boot_id, carry_limit)
    marked = replace(
        report,
        checks=checks,
        verdicts=verdicts,
        cleared=cleared,
        deltas=deltas,
        headline=_headline(report.headline, marker, cleared, previous),
    )
    return Marked(marked, list(marker.items.values()), counters)


class _Marker:
    def __init__(self, previous: DaemonState | None, now: str, windowed: bool) -> None:
        self.previous = {item.key: item for item in previous.items} if previous else {}
        self.now = now
        self.windowed = windowed
        self.items: dict[str, TrackedItem] = {}
        self.new = 0
        self.persisting = 0

    def check(self, result: CheckResult) -> CheckResult:
        if not result.findings:
            return result
        findings = [self.finding(result.name, f) for f in result.findings]
        return replace(result, findings=findings)

    def finding(self, check: str, finding: Finding) -> Finding:
        status = finding.severity.as_status()
        key = finding_key(check, finding)
        event = is_event_finding(finding)
        state, since = self._mark(key, status, fresh=event and self.windowed)
        self._keep(
            TrackedItem(
                kind="finding",
                key=key,
                code=finding.code,
                check=check,
                device=finding.device,
                status=status,
                message=finding.message,
                event=event,
                since=since,
                last_seen=self.now,
            )
        )
        return replace(finding, state=state, since=since)

    def verdict(self, verdict: Verdict) -> Verdict:
        if verdict.status not in _TRACKED_VERDICTS:
            return verdict
        key = verdict_key(verdict)
        before = self.previous.get(key)
        if verdict.status == Status.UNKNOWN and before is not None and before.status in _FIRED:
            self.items.setdefault(key, before)  # not judged now: the condition is carried over
            return verdict
        state, since = self._mark(key, verdict.status, fresh=False)
        self._keep(
            TrackedItem(
                kind="verdict",
                key=key,
                code=verdict.rule,
                device=verdict.device,
                status=verdict.status,
                message=verdict.message,
                since=since,
                last_seen=self.now,
            )
        )
        return replace(verdict, state=state, since=since)

    def _mark(self, key: str, status: Status, fresh: bool) -> tuple[str, str]:
        twin = self.items.get(key)
        if twin is not None:  # the same key twice in one run: one mark for both
            return ("new" if twin.since == self.now else "persisting"), twin.since
        before = self.previous.get(key)
        if fresh or before is None or _worse(before.status, status):
            self.new += 1
            return "new", self.now
        self.persisting += 1
        return "persisting", before.since

    def _keep(self, item: TrackedItem) -> None:
        self.items.setdefault(item.key, item)

    def close(self, report: Report, now: datetime, carry_limit: timedelta) -> list[Cleared]:
        """Previous items absent now: cleared once, dropped, or carried over."""
        cleared: list[Cleared] = []
        for key, before in self.previous.items():
            if key in self.items:
                continue
            if _judged(before, report):
                if before.status in _FIRED and not before.event:
                    cleared.append(
                        Cleared(
                            kind=before.kind,
                            code=before.code,
                            check=before.check,
                            device=before.device,
                            status=before.status,
                            message=before.message,
                            since=before.since,
                            last_seen=before.last_seen,
                        )
                    )
            elif not _expired(before.last_seen, now, carry_limit):
                self.items[key] = before
        return cleared


def _worse(before: Status, now: Status) -> bool:
    """A change that is news: info → warning → critical, or between unknown and judged."""
    if (before == Status.UNKNOWN) != (now == Status.UNKNOWN):
        return True
    return now.rank > before.rank


def _judged(item: TrackedItem, report: Report) -> bool:
    """Whether this run judged what raised `item` (so its absence means it is gone)."""
    if item.kind == "finding":
        return _check_judged(report, item.check or "")
    return any(verdict_key(v) == item.key and v.status in _JUDGED for v in report.verdicts)


def _check_judged(report: Report, name: str) -> bool:
    result = report.check(name)
    return result is not None and result.status != Status.SKIPPED and result.error is None


def _expired(last_seen: str, now: datetime, limit: timedelta) -> bool:
    seen = _parse(last_seen)
    return seen is None or now - seen > limit


def _parse(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _counters(
    report: Report,
    previous: DaemonState | None,
    now: datetime,
    boot_id: str | None,
    carry_limit: timedelta,
) -> tuple[list[CounterDelta], list[CounterValue]]:
    before = {c.key: c for c in previous.counters} if previous else {}
    rebooted = bool(
        previous is not None and previous.boot_id and boot_id and previous.boot_id != boot_id
    )
    deltas: list[CounterDelta] = []
    kept: dict[str, CounterValue] = {}
    for result in report.checks:
        for metric in result.metrics:
            if not is_cumulative(metric):
                continue
            key = counter_key(result.name, metric)
            if key in kept:
                continue
            last = before.get(key)
            deltas.append(_delta(result.name, metric, last, now, rebooted))
            kept[key] = CounterValue(
                key=key,
                check=result.name,
                name=metric.name,
                unit=metric.unit,
                labels=metric.labels,
                value=metric.value,
                at=stamp(now),
            )
    for key, last in before.items():
        if key in kept or rebooted:
            continue
        if not _check_judged(report, last.check) and not _expired(last.at, now, carry_limit):
            kept[key] = last
    return deltas, list(kept.values())


def _delta(
    check: str, metric: Metric, last: CounterValue | None, now: datetime, rebooted: bool
) -> CounterDelta:
    previous = last.value if last is not None else None
    seen = _parse(last.at) if last is not None else None
    interval = round((now - seen).total_seconds(), 3) if seen is not None else None
    if rebooted:
        delta: float | None = metric.value
        reset = True
    elif previous is None:
        delta, reset = None, False
    elif metric.value < previous:
        delta, reset = metric.value, True
    else:
        delta, reset = metric.value - previous, False
    return CounterDelta(
        check=check,
        name=metric.name,
        unit=metric.unit,
        labels=metric.labels,
        value=metric.value,
        previous=previous,
        delta=delta,
        reset=reset,
        interval_s=interval,
    )


def _headline(
    headline: str, marker: _Marker, cleared: list[Cleared], previous: DaemonState | None
) -> str:
    if previous is None:
        return headline
    parts = [
        f"{count} {label}"
        for count, label in (
            (marker.new, "new"),
            (marker.persisting, "persisting"),
            (len(cleared), "cleared"),
        )
        if count
    ]
    return f"{headline} — since the last run: {', '.join(parts)}" if parts else headline
