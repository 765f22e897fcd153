"""One port over the window: its state (`infiniband.port_down`, critical, where it is not
ACTIVE/LinkUp; `infiniband.port_disabled`, info, where it is switched off), link layer and
rate; its counters' growth, from which `link_downed`, `local_link_integrity_errors` and
`excessive_buffer_overrun_errors` growing is `infiniband.link_errors_grew` (critical) and
`link_error_recovery` growing `infiniband.link_recovered` (warning); the rates the rules judge
(symbol errors, receive errors, transmit discards per second; retransmits per packet sent);
and its metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitscheck.models import Device, Evidence, Metric, Severity

from . import counters as c
from .growth import Growth, counters_of, total, why, window_packets
from .output import Inputs, Output, present_labels
from .pairing import Pairing
from .parse import PHYS_DISABLED, PHYS_LINK_UP, PORT_ACTIVE, first_line, numbered, rate
from .tree import PortFiles

_BYTES_PER_WORD = 4  # PortXmitData/PortRcvData count 32-bit words


def judge_port(
    port: PortFiles, later: PortFiles | None, bus: str | None, pairing: Pairing, work: Output
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
    growth = counters_of(port, later, work.seconds)
    entry["totals"] = {k: g.total for k, g in growth.items() if g.total is not None}
    entry["deltas"] = {k: g.delta for k, g in growth.items() if g.delta is not None}
    entry["unreadable"] = sorted(k for k, g in growth.items() if g.state == "unreadable")
    entry["saturated"] = sorted(k for k, g in growth.items() if g.state == "saturated")
    entry["went_back"] = sorted(k for k, g in growth.items() if g.state == "went_back")
    labels = present_labels(
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


def _state(
    entry: dict[str, Any],
    state: Any,
    phys: Any,
    files: Mapping[str, str | None],
    inputs: Inputs,
    work: Output,
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
    entry: dict[str, Any], growth: Mapping[str, Growth], window: float | None, work: Output
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
            work.note(f"{counter_name} rate: the counter {why(g)}", name)
    packets = window_packets(growth, "xmit")
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


def _link_errors(
    entry: dict[str, Any], growth: Mapping[str, Growth], inputs: Inputs, work: Output
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
    growth: Mapping[str, Growth],
    gbps: float | None,
    labels: dict[str, str],
    work: Output,
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
        data = total(growth, f"port_{word}_data")
        io = {"network.io.direction": direction}
        add("hw.network.io", None if data is None else data * _BYTES_PER_WORD, "By", **io)
        add("hw.network.packets", total(growth, f"port_{word}_packets"), "{packet}", **io)
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
