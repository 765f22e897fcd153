"""Pure: two readings of /sys/class/infiniband → facts, metrics and the findings that need no
threshold.

Per port, from the latest reading: its state (`infiniband.port_down`, critical, where it is not
ACTIVE/LinkUp; `infiniband.port_disabled`, info, where it is switched off), link layer and
rate. Over the window: every counter's growth, from which `link_downed`,
`local_link_integrity_errors` and `excessive_buffer_overrun_errors` growing is
`infiniband.link_errors_grew` (critical) and `link_error_recovery` growing
`infiniband.link_recovered` (warning); the rates the rules judge (symbol errors, receive
errors, transmit discards per second; retransmits per packet sent; CQ overflows per second)
are facts. Per HCA: its PCI function, the GPUs on its PCIe switch, the CQ overruns the kernel
log reports on it (`infiniband.cq_overrun`). What cannot be judged is said, grouped by reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from sitscheck.contract import CheckOutput
from sitscheck.models import Device, Evidence, Finding, Metric, Severity

from . import counters as c
from .cqlog import CqOverrunLines
from .facts import Settings
from .pairing import Pairing
from .parse import (
    PHYS_DISABLED,
    PHYS_LINK_UP,
    PORT_ACTIVE,
    counter,
    first_line,
    numbered,
    rate,
    slot_name,
)
from .tree import HcaFiles, PortFiles, split
from .window import MIN_WINDOW_S, Window

_BYTES_PER_WORD = 4  # PortXmitData/PortRcvData count 32-bit words


class Inputs(Struct, frozen=True):
    """What the judging reads: the window, each HCA's paired GPUs, the overrun lines, settings."""

    window: Window
    source: str  # "/sys" live, the bundle's sysfs folder in a replay
    pairing: Mapping[str, Pairing] = field(default_factory=dict)
    gpu_buses: Sequence[str] = ()
    cq_log: CqOverrunLines | None = None
    log_facts: dict[str, Any] | None = None
    log_reason: str | None = None  # why the kernel log could not be read
    settings: Settings = field(default_factory=Settings)


class _Growth(Struct):
    """One counter over the window."""

    total: int | None = None
    delta: int | None = None
    state: str = "ok"  # ok | unreadable | saturated | went_back


class _Out(Struct):
    """What the judging writes, and the window it judges over (shared by every HCA, port)."""

    inputs: Inputs
    seconds: float | None  # between the readings; None: read once
    rate_window: float | None  # the same where long enough for a rate
    out: CheckOutput = field(default_factory=CheckOutput)
    notes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def find(
        self, code: str, severity: Severity, message: str, device: Device, evidence: Evidence
    ) -> None:
        self.out.findings.append(
            Finding(
                code=code, severity=severity, message=message, device=device, evidence=[evidence]
            )
        )

    def note(self, reason: str, who: str) -> None:
        if who not in self.notes[reason]:
            self.notes[reason].append(who)


def judge(inputs: Inputs) -> CheckOutput:
    window = inputs.window
    start = split(window.start.files)
    end = split(window.end.files) if window.end is not None else {}
    seconds = window.seconds if window.end is not None else None
    rate_window = seconds if seconds is not None and seconds >= MIN_WINDOW_S else None
    work = _Out(inputs, seconds, rate_window)
    if window.note:
        work.out.not_judged.append(
            f"counter growth (link errors, retransmits, CQ overflows): {window.note}"
        )
    elif seconds is not None and seconds < MIN_WINDOW_S:
        work.out.not_judged.append(
            f"counter rates: the window was {seconds} s, under {MIN_WINDOW_S} s"
        )
    hcas: list[dict[str, Any]] = []
    ports: list[dict[str, Any]] = []
    ignored: list[str] = []
    for name, hca in start.items():
        last = end.get(name)
        pairing = inputs.pairing.get(name, Pairing((), None))
        bus = slot_name(hca.files.get("device/uevent"))
        hcas.append(_hca(hca, last, bus, pairing, work))
        for number, port in hca.ports.items():
            label = f"{name} port {number}"
            if inputs.settings.ignores(name, number):
                ignored.append(label)
                continue
            later = last.ports.get(number) if last is not None else None
            ports.append(_port(port, later, bus, pairing, work))
    work.out.facts = {
        "source": inputs.source,
        "window_s": seconds,
        "hcas": hcas,
        "ports": ports,
        "gpus": _gpus(inputs, ports),
        "ignored_ports": ignored,
        "kernel_log": inputs.log_facts,
    }
    for reason, who in work.notes.items():
        work.out.not_judged.append(f"{reason}: {', '.join(who)}")
    return work.out


def _hca(
    hca: HcaFiles, last: HcaFiles | None, bus: str | None, pairing: Pairing, work: _Out
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": hca.name,
        "pci_bus_id": bus,
        "hca_type": first_line(hca.files.get("hca_type")),
        "fw_ver": first_line(hca.files.get("fw_ver")),
        "board_id": first_line(hca.files.get("board_id")),
        "node_type": first_line(hca.files.get("node_type")),
        "ports": sorted(hca.ports),
        "gpus": list(pairing.gpus),
        "common_port": pairing.common_port,
        "cq_overflow_counter": None,
        "cq_overruns_logged": None,
    }
    if bus is None:
        work.note(
            "no PCI function (device/uevent without PCI_SLOT_NAME): not joined to GPUs", hca.name
        )
    labels = _present({"hca": hca.name, "device": bus, "hw.type": "network"})
    found = next((n for n in c.CQ_OVERFLOW if f"{c.HW}{n}" in hca.files), None)
    if found is None:
        work.note(
            "CQ overflow rate: the device counts no CQ overflows (mlx5 reports overruns only "
            "in the kernel log)",
            hca.name,
        )
    else:
        key = f"{c.HW}{found}"
        later = last.files.get(key) if last else None
        growth = _growth(key, hca.files.get(key), later, work.seconds)
        entry["cq_overflow_counter"] = key
        entry["cq_overflows"] = growth.delta
        if growth.delta is not None and work.rate_window is not None:
            entry["cq_overflow_per_s"] = round(growth.delta / work.rate_window, 3)
        if growth.total is not None:
            work.out.metrics.append(
                Metric(
                    name="sitscheck.infiniband.cq_overflows",
                    value=growth.total,
                    unit="{overflow}",
                    labels=labels,
                )
            )
    _cq_log(entry, bus, labels, work.inputs, work)
    return entry


def _cq_log(
    entry: dict[str, Any], bus: str | None, labels: dict[str, str], inputs: Inputs, work: _Out
) -> None:
    if inputs.cq_log is None:
        work.note(
            f"CQ overruns in the kernel log: {inputs.log_reason or 'the log was not read'}",
            entry["name"],
        )
        return
    if bus is None:
        return
    count = inputs.cq_log.by_bus.get(bus, 0)
    entry["cq_overruns_logged"] = count
    work.out.metrics.append(
        Metric(
            name="sitscheck.infiniband.cq_overruns_logged",
            value=count,
            unit="{event}",
            labels=labels,
        )
    )
    if count == 0:
        return
    mine = [e for e in inputs.cq_log.events if e.pci_bus_id == bus]
    cqns = ", ".join(dict.fromkeys(e.cqn for e in mine[:8]))
    work.find(
        "infiniband.cq_overrun",
        Severity.WARNING,
        f"{entry['name']} ({bus}): the kernel log reports {count} completion-queue overrun(s) "
        f"(CQN {cqns}): a CQ too small or polled too slowly, now in error",
        Device(pci_bus_id=bus, name=entry["name"]),
        Evidence(
            source="kernel log",
            ref=(inputs.log_facts or {}).get("source"),
            excerpt="\n".join(e.line for e in mine[:10]),
        ),
    )


def _port(
    port: PortFiles, later: PortFiles | None, bus: str | None, pairing: Pairing, work: _Out
) -> dict[str, Any]:
    name = f"{port.hca} port {port.port}"
    latest = later.files if later is not None else port.files

    def now(key: str) -> str | None:
        value = latest.get(key)
        return value if value is not None else port.files.get(key)

    state = numbered(now("state"))
    phys = numbered(now("phys_state"))
    first_state = numbered(port.files.get("state"))
    speed = rate(now("rate"))
    link_layer = first_line(now("link_layer"))
    active = state.code == PORT_ACTIVE and phys.code == PHYS_LINK_UP if state and phys else None
    disabled = phys.code == PHYS_DISABLED if phys else None
    entry: dict[str, Any] = {
        "name": name,
        "hca": port.hca,
        "port": port.port,
        "pci_bus_id": bus,
        "link_layer": link_layer,
        "state": state.name if state else None,
        "state_code": state.code if state else None,
        "phys_state": phys.name if phys else None,
        "phys_state_code": phys.code if phys else None,
        "active": active,
        "disabled": disabled,
        "state_at_start": (
            first_state.name if first_state and state and first_state != state else None
        ),
        "rate": first_line(now("rate")),
        "rate_gbps": speed.gbps if speed else None,
        "gpus": list(pairing.gpus),
    }
    growth = _counters(port, later, work.seconds)
    entry["totals"] = {k: g.total for k, g in growth.items() if g.total is not None}
    entry["deltas"] = {k: g.delta for k, g in growth.items() if g.delta is not None}
    entry["unreadable"] = sorted(k for k, g in growth.items() if g.state == "unreadable")
    entry["saturated"] = sorted(k for k, g in growth.items() if g.state == "saturated")
    entry["went_back"] = sorted(k for k, g in growth.items() if g.state == "went_back")
    labels = _present(
        {
            "hca": port.hca,
            "port": str(port.port),
            "device": bus,  # its PCI function (pcie_aer names ports so)
            "hw.type": "network",
            "link_layer": link_layer,
        }
    )
    _state(entry, state, phys, latest, work.inputs, work)
    _rates(entry, growth, work.rate_window, work)
    _link_errors(entry, growth, work.inputs, work)
    _metrics(entry, growth, speed.gbps if speed else None, labels, work)
    return entry


def _counters(
    port: PortFiles, later: PortFiles | None, seconds: float | None
) -> dict[str, _Growth]:
    keys = [k for k in port.files if k.startswith((c.COUNTERS, c.COUNTERS_EXT, c.HW))]
    return {
        key: _growth(key, port.files.get(key), later.files.get(key) if later else None, seconds)
        for key in sorted(keys)
    }


def _growth(key: str, first: str | None, last: str | None, seconds: float | None) -> _Growth:
    before = counter(first)
    after = counter(last) if seconds is not None else None
    total = after if after is not None else before
    if total is None:
        return _Growth(state="unreadable")
    width = c.PMA_WIDTH.get(key.removeprefix(c.COUNTERS)) if key.startswith(c.COUNTERS) else None
    top = (1 << width) - 1 if width is not None else None
    if top is not None and before == top:
        return _Growth(total, None, "saturated")  # stuck at all ones: growth unknown
    if before is None or after is None:
        return _Growth(total)
    if after < before:
        return _Growth(total, None, "went_back")
    # at its maximum by the end, the growth is at least this much
    return _Growth(total, after - before, "saturated" if after == top else "ok")


def _state(
    entry: dict[str, Any],
    state: Any,
    phys: Any,
    files: Mapping[str, str | None],
    inputs: Inputs,
    work: _Out,
) -> None:
    name = entry["name"]
    if entry["active"] is None:
        work.note("port state unreadable (state/phys_state not in the kernel's format)", name)
        return
    if entry["active"]:
        return
    bus = entry["pci_bus_id"] or "bus id unknown"
    where = f"{name} ({bus}, {entry['link_layer'] or 'link layer unknown'})"
    excerpt = "\n".join(
        f"{key}: {(files.get(key) or '').strip()}" for key in ("state", "phys_state", "rate")
    )
    since = (
        f" (it was {entry['state_at_start']} when the window began)"
        if entry["state_at_start"]
        else ""
    )
    evidence = Evidence(
        source="sysfs",
        ref=f"{inputs.source}/class/infiniband/{entry['hca']}/ports/{entry['port']}",
        excerpt=excerpt,
    )
    device = Device(pci_bus_id=entry["pci_bus_id"], name=name)
    states = f"state {state.code}: {state.name}, physical state {phys.code}: {phys.name}{since}"
    if entry["disabled"]:
        work.find(
            "infiniband.port_disabled",
            Severity.INFO,
            f"{where} is disabled: {states}",
            device,
            evidence,
        )
        return
    work.find(
        "infiniband.port_down",
        Severity.CRITICAL,
        f"{where} is down: {states}: no RDMA traffic crosses it",
        device,
        evidence,
    )


def _rates(
    entry: dict[str, Any], growth: Mapping[str, _Growth], window: float | None, work: _Out
) -> None:
    if window is None:
        return
    name = entry["name"]
    for counter_name in c.RATED:
        g = growth.get(f"{c.COUNTERS}{counter_name}")
        if g is not None and g.delta is not None:
            entry[f"{counter_name}_per_s"] = round(g.delta / window, 3)
        elif g is None or g.state == "unreadable":
            work.note(f"{counter_name} rate: the port has no readable counter", name)
        else:
            work.note(f"{counter_name} rate: the counter {_why(g)}", name)
    packets = _packets(growth, "xmit")
    present = [n for n in c.RETRANSMIT if f"{c.HW}{n}" in growth]
    if not present:
        work.note(
            "retransmit rate: no mlx5 retransmission hw_counters "
            f"({', '.join(c.RETRANSMIT)}) on the port",
            name,
        )
        return
    deltas = [growth[f"{c.HW}{n}"].delta for n in present]
    if any(d is None for d in deltas) or packets is None:
        work.note("retransmit rate: a counter went back, is unreadable or stuck", name)
        return
    entry["xmit_packets"] = packets
    entry["retransmits"] = sum(d for d in deltas if d is not None)
    if packets > 0:
        entry["retransmit_pct"] = round(100.0 * entry["retransmits"] / packets, 4)


def _packets(growth: Mapping[str, _Growth], direction: str) -> int | None:
    """Packets sent (or received) during the window: the PMA counter, else the 64-bit one."""
    basic = growth.get(f"{c.COUNTERS}port_{direction}_packets")
    if basic is not None and basic.delta is not None and basic.state == "ok":
        return basic.delta
    wide = growth.get(f"{c.COUNTERS_EXT}port_{direction}_packets_64")
    if wide is not None and wide.delta is not None and wide.delta > 0:
        return wide.delta
    return None


def _link_errors(
    entry: dict[str, Any], growth: Mapping[str, _Growth], inputs: Inputs, work: _Out
) -> None:
    grew = {
        n: g.delta
        for n in c.LINK_FATAL
        if (g := growth.get(f"{c.COUNTERS}{n}")) is not None and g.delta
    }
    window = inputs.window.seconds
    where = f"{entry['name']} ({entry['pci_bus_id'] or 'bus id unknown'})"
    device = Device(pci_bus_id=entry["pci_bus_id"], name=entry["name"])
    ref = f"{inputs.source}/class/infiniband/{entry['hca']}/ports/{entry['port']}/counters"
    if grew:
        text = ", ".join(f"{n} +{d}" for n, d in grew.items())
        work.find(
            "infiniband.link_errors_grew",
            Severity.CRITICAL,
            f"{where}: {text} during the {window} s window",
            device,
            Evidence(source="sysfs", ref=ref, excerpt=text),
        )
    recovery = growth.get(f"{c.COUNTERS}{c.LINK_RECOVERY}")
    if recovery is not None and recovery.delta:
        work.find(
            "infiniband.link_recovered",
            Severity.WARNING,
            f"{where}: the link retrained {recovery.delta} time(s) (link_error_recovery) "
            f"during the {window} s window",
            device,
            Evidence(source="sysfs", ref=ref, excerpt=f"link_error_recovery +{recovery.delta}"),
        )


def _metrics(
    entry: dict[str, Any],
    growth: Mapping[str, _Growth],
    gbps: float | None,
    labels: dict[str, str],
    work: _Out,
) -> None:
    out = work.out.metrics

    def add(name: str, value: float | None, unit: str, **more: str) -> None:
        if value is not None:
            out.append(Metric(name=name, value=value, unit=unit, labels={**labels, **more}))

    if entry["active"] is not None:
        add("hw.network.up", 1 if entry["active"] else 0, "1")
    if entry["active"] and gbps is not None:
        add("hw.network.bandwidth.limit", gbps * 1e9 / 8, "By/s")
    for direction, word in (("transmit", "xmit"), ("receive", "rcv")):
        data = _total(growth, f"port_{word}_data")
        io = {"network.io.direction": direction}
        add("hw.network.io", None if data is None else data * _BYTES_PER_WORD, "By", **io)
        add("hw.network.packets", _total(growth, f"port_{word}_packets"), "{packet}", **io)
    series = [("hw.errors", "{error}", "error.type", c.COUNTERS, c.ERRORS)]
    series.append(("sitscheck.infiniband.retransmits", "{packet}", "counter", c.HW, c.RETRANSMIT))
    if entry["link_layer"] == "Ethernet":
        congestion = ("sitscheck.infiniband.roce.congestion", "{packet}", "counter")
        series.append((*congestion, c.HW, c.CONGESTION))
    for name, unit, label, folder, counters in series:
        for counter_name in counters:
            g = growth.get(f"{folder}{counter_name}")
            add(name, g.total if g is not None else None, unit, **{label: counter_name})
    pct = entry.get("retransmit_pct")
    add("sitscheck.infiniband.retransmit_rate", None if pct is None else pct / 100, "1")


def _total(growth: Mapping[str, _Growth], name: str) -> int | None:
    """A data/packet total: the 64-bit extended counter where the PMA one is stuck."""
    basic = growth.get(f"{c.COUNTERS}{name}")
    if basic is not None and basic.total is not None and basic.state != "saturated":
        return basic.total
    wide = growth.get(f"{c.COUNTERS_EXT}{name}_64")
    if wide is not None and wide.total:
        return wide.total
    return basic.total if basic is not None else None


def _gpus(inputs: Inputs, ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for bus in inputs.gpu_buses:
        hcas = [name for name, p in inputs.pairing.items() if bus in p.gpus]
        common = next((inputs.pairing[h].common_port for h in hcas), None)
        out.append(
            {
                "pci_bus_id": bus,
                "hcas": hcas,
                "ports": [p["name"] for p in ports if p["hca"] in hcas],
                "common_port": common,
            }
        )
    return out


def _why(growth: _Growth) -> str:
    return {
        "saturated": "is stuck at its maximum",
        "went_back": "went back (reset or wrapped)",
    }.get(growth.state, "was read once")


def _present(labels: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if v}
