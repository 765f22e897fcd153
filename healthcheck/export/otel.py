"""Export a run's report over OTLP (traces and metrics), with an on-disk spool for outages.

`export_report` is the whole job, synchronous and bounded by `timeout_s`:
1. build the run's two payloads (`payload.py`: an `ExportTraceServiceRequest` and an
   `ExportMetricsServiceRequest`, serialised once);
2. write them to the spool (`spool.py`, `STATE_DIR/spool`), each with its destination,
   before sending anything;
3. holding the spool's lock, drop what is past the age limit (and files of the earlier
   format, which name no destination), then send every spooled payload whose destination
   this run has, oldest first (earlier runs' first), each under the per-request timeout and
   what is left of `timeout_s` (`transport.py`), each signal to its own endpoint
   (`settings.py`); a payload is deleted once the receiver acknowledged it; an endpoint that
   is down or slow stops the sending to it, a kind it refuses stops that kind; a payload
   meant for an endpoint this run does not have waits (it is never sent elsewhere);
4. trim the spool to its count and byte limits and count what was dropped.

No SDK providers, exporters or background threads: nothing is left to flush or shut down
when this returns, and the process can exit at once. It never raises: problems come back in
`ExportResult.errors` (header values never appear there). OpenTelemetry and grpc are
imported only inside `export_report`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct, field

from ..config import OtlpSettings
from ..models import Report
from .settings import ExportSettings, as_export_settings, redact_url, resolve_settings
from .spool import DropCounts, Entry, Spool, SpoolLimits, destination_id

if TYPE_CHECKING:
    from .transport import Sender

__all__ = ["ExportResult", "export_report", "resolve_settings"]

SPOOL_DIR = "spool"
_MIN_ATTEMPT_S = 0.05
_LOCK_WAIT_S = 1.0


class ExportResult(Struct):
    """What an export did; `errors` are messages for the operator, without secrets."""

    enabled: bool
    endpoint: str | None = None  # user:password removed
    protocol: str | None = None
    trace_id: str | None = None  # hex, of this run's trace
    delivered: list[str] = field(default_factory=list)  # payloads acknowledged by this call
    delivered_earlier: int = 0  # of which earlier runs' payloads, from the spool
    current_delivered: bool = False  # both of this run's payloads acknowledged
    pending: int = 0  # payloads left in the spool for the next run
    waiting: int = 0  # of which meant for an endpoint this run does not have
    dropped: int = 0  # dropped by the spool's bounds during this call
    rejected: int = 0  # refused for good by the receiver during this call (and dropped)
    lost: int = 0  # this run's payloads neither delivered nor spooled (spool unusable)
    dropped_total: int = 0  # cumulative, from the spool's state file
    rejected_total: int = 0  # cumulative
    rejected_items: int = 0  # spans or data points refused in partial successes
    spool_dir: str | None = None
    duration_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for a log."""
        if not self.enabled:
            return "otlp: off"
        state = "this run delivered" if self.current_delivered else "this run not delivered"
        line = (
            f"otlp {self.protocol} {self.endpoint}: {state}, {len(self.delivered)} payload(s) "
            f"delivered ({self.delivered_earlier} from the spool), {self.pending} pending"
        )
        if self.waiting:
            line += f" ({self.waiting} for another endpoint)"
        if self.dropped or self.rejected or self.lost:
            line += f", {self.dropped} dropped, {self.rejected} rejected, {self.lost} lost"
        if self.errors:
            line += " — " + "; ".join(self.errors)
        return line


def export_report(
    report: Report,
    settings: ExportSettings | OtlpSettings,
    state_dir: Path,
    timeout_s: float,
) -> ExportResult:
    """Send this run's trace and metrics (and what earlier runs left spooled) within `timeout_s`.

    `settings` as `resolve_settings` returns them (an `OtlpSettings` is read with no
    environment); no endpoint: nothing is done. The spool is `state_dir/spool`.
    """
    began = time.monotonic()
    resolved = as_export_settings(settings)
    secrets = resolved.secrets()
    if not resolved.endpoint:
        return ExportResult(enabled=False)
    result = ExportResult(
        enabled=True,
        endpoint=", ".join(
            dict.fromkeys(redact_url(s.endpoint) for s in resolved.signals.values())
        ),
        protocol=resolved.protocol,
        spool_dir=str(state_dir / SPOOL_DIR),
    )
    if resolved is not settings:  # settings of a file alone: no CLI to have told these
        result.errors.extend(resolved.warnings)
    try:
        _export(report, resolved, state_dir, began + max(timeout_s, 0.0), result)
    except Exception as exc:  # an export must never cost the run its report or exit code
        result.errors.append(f"internal error: {type(exc).__name__}: {exc}")
    from .transport import scrub

    result.errors = [scrub(message, secrets) for message in result.errors]
    result.duration_s = round(time.monotonic() - began, 3)
    return result


class _Item(Struct):
    """One payload to send: this run's or a spooled one, from its spool entry or from memory."""

    kind: str
    current: bool  # this run's payload
    entry: Entry | None = None  # spooled
    body: bytes = b""  # in memory, when the spool is unusable
    delivered: bool = False


def _export(
    report: Report, settings: ExportSettings, state_dir: Path, deadline: float, result: ExportResult
) -> None:
    from .payload import Extras, build_payloads, detect_host, resource_attributes

    limits = SpoolLimits(
        settings.spool_max_files, settings.spool_max_bytes, settings.spool_max_age_s
    )
    spool: Spool | None = None
    counts = None
    try:
        opened = Spool(state_dir / SPOOL_DIR, limits)
        opened.open()
        counts = opened.counts()
        spool = opened
    except OSError as exc:
        result.errors.append(f"spool {result.spool_dir} unusable: {exc.strerror or exc}")
    payloads = build_payloads(
        report,
        resource_attributes(
            report, detect_host(report), settings.service_name, settings.resource_attributes
        ),
        Extras(
            dropped_payloads=counts.payloads if counts else 0,
            rejected_payloads=counts.rejected if counts else 0,
            dropped_since_ns=int(counts.since * 1e9) if counts else 0,
            counter_start_ns=_boot_ns() if report.mode == "live" else 0,
        ),
    )
    result.trace_id = payloads.trace_id.hex()
    bodies = {
        kind: body
        for kind, body in (("traces", payloads.traces), ("metrics", payloads.metrics))
        if kind in settings.signals
    }
    current = [_Item(kind, True) for kind in bodies]
    if spool is not None:
        try:
            for item in current:
                where = settings.signals[item.kind].target.destination(item.kind)
                item.entry = spool.put(item.kind, where, bodies[item.kind], payloads.run_time_ns)
        except OSError as exc:
            result.errors.append(f"spool {result.spool_dir} not writable: {exc.strerror or exc}")
            for item in current:
                if item.entry is not None:
                    spool.remove(item.entry)
                    item.entry = None
            spool = None
    if spool is None:  # send from memory: what does not get through is lost
        for item in current:
            item.body = bodies[item.kind]
        _send(current, None, settings, deadline, result)
        result.lost = sum(1 for item in current if not item.delivered)
        result.current_delivered = result.lost == 0
        return

    wait = min(_LOCK_WAIT_S, max(deadline - time.monotonic(), 0.0) / 4)
    with spool.locked(wait) as held:
        if held:
            counts = _drain_spool(spool, current, settings, deadline, result)
        else:
            result.errors.append("another sitscheck run holds the spool: nothing sent")
            counts = spool.counts()
    result.dropped_total = counts.payloads
    result.rejected_total = counts.rejected
    mine = _destinations(settings)
    left = spool.pending()
    result.pending = len(left)
    result.waiting = sum(1 for e in left if mine.get(e.destination) != e.kind)


def _destinations(settings: ExportSettings) -> dict[str, str]:
    """This run's destinations (their ids) and the signal each one takes."""
    return {
        destination_id(signal.target.destination(kind)): kind
        for kind, signal in settings.signals.items()
    }


def _drain_spool(
    spool: Spool,
    current: list[_Item],
    settings: ExportSettings,
    deadline: float,
    result: ExportResult,
) -> DropCounts:
    """Holding the lock: drop what is too old (or names no destination), send what goes to
    this run's endpoints, trim to the bounds; the drop counts after it."""
    expired = spool.expire(time.time())
    earlier = spool.earlier_format()
    for entry in earlier:
        spool.remove(entry)
    if earlier:
        result.errors.append(
            f"{len(earlier)} payload(s) spooled by an earlier version, which did not record "
            "their endpoint, dropped unsent"
        )
    mine = _destinations(settings)
    names = {item.entry.name for item in current if item.entry is not None}
    queue = [
        _Item(e.kind, e.name in names, e)
        for e in spool.pending()
        if mine.get(e.destination) == e.kind
    ]
    _send(queue, spool, settings, deadline, result)
    result.current_delivered = sum(i.delivered for i in queue if i.current) == len(current)
    trimmed = spool.trim()
    bounded = expired + trimmed
    result.dropped = len(bounded) + len(earlier)
    if bounded:
        elsewhere = {
            redact_url(spool.destination(e.destination) or f"id {e.destination}")
            for e in bounded
            if mine.get(e.destination) != e.kind
        }
        note = f" (meant for {', '.join(sorted(elsewhere))})" if elsewhere else ""
        result.errors.append(f"spool bounds dropped {len(bounded)} payload(s){note}")
    spool.forget_destinations()
    return spool.add_counts(bounded + earlier, result.rejected)


def _send(
    queue: list[_Item],
    spool: Spool | None,
    settings: ExportSettings,
    deadline: float,
    result: ExportResult,
) -> None:
    """Send in order until out of time; a kind refused, or whose endpoint failed, is skipped."""
    from .transport import open_sender

    senders: dict[str, Sender] = {}
    try:
        for kind, signal in settings.signals.items():
            try:
                senders[kind] = open_sender(signal)
            except OSError as exc:
                result.errors.append(f"otlp {kind}: TLS files unreadable: {exc.strerror or exc}")
        _drain(queue, spool, senders, settings, deadline, result)
    finally:
        for sender in senders.values():
            sender.close()


def _drain(
    queue: list[_Item],
    spool: Spool | None,
    senders: dict[str, Sender],
    settings: ExportSettings,
    deadline: float,
    result: ExportResult,
) -> None:
    from .transport import Outcome

    blocked: set[str] = {kind for kind in settings.signals if kind not in senders}
    for item in queue:
        if item.kind in blocked:
            continue
        remaining = deadline - time.monotonic()
        if remaining < _MIN_ATTEMPT_S:
            result.errors.append("out of time: the rest stays spooled")
            return
        body = item.body
        if spool is not None and item.entry is not None:
            try:
                body = spool.read(item.entry)
            except OSError:
                continue
        signal = settings.signals[item.kind]
        sent = senders[item.kind].send(item.kind, body, min(signal.timeout_s, remaining))
        name = item.entry.name if item.entry is not None else f"{item.kind} of this run"
        if sent.outcome is Outcome.DELIVERED:
            item.delivered = True
            result.delivered.append(name)
            result.delivered_earlier += not item.current
            result.rejected_items += sent.rejected_items
            if sent.rejected_items or sent.detail:
                result.errors.append(
                    f"{name}: the receiver refused {sent.rejected_items} item(s): {sent.detail}"
                )
        elif sent.outcome is Outcome.REJECTED:
            result.rejected += 1
            result.errors.append(f"{name} refused for good, dropped: {sent.detail}")
        else:
            result.errors.append(f"{item.kind} not sent: {sent.detail}")
            blocked.add(item.kind)
            if sent.outcome is Outcome.ENDPOINT_DOWN:  # every signal sent to that host waits
                down = signal.target.authority
                blocked.update(k for k, s in settings.signals.items() if s.target.authority == down)
            continue
        if spool is not None and item.entry is not None:
            spool.remove(item.entry)


def _boot_ns() -> int:
    """Start of cumulative hardware counters (ECC, energy): the boot; 0 where unknown."""
    try:
        import psutil

        return int(psutil.boot_time() * 1e9)
    except Exception:
        return 0
