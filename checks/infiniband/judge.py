"""Pure: two readings of /sys/class/infiniband → facts, metrics and the findings that need no
threshold.

Per port (`ports.py`), from the latest reading: its state, link layer and rate; over the window
(`growth.py`): every counter's growth, the link errors that grew, the rates the rules judge.
Per HCA (here): its PCI function, the GPUs on its PCIe switch, the CQ overruns the kernel
log reports on it (`infiniband.cq_overrun`), its CQ overflows per second. What cannot be
judged is said, grouped by reason.
"""

from __future__ import annotations

from typing import Any

from sitscheck.contract import CheckOutput
from sitscheck.models import Device, Evidence, Metric, Severity

from . import counters as c
from .growth import growth_of
from .output import Inputs, Output, present_labels
from .pairing import Pairing
from .parse import first_line, slot_name
from .ports import judge_port
from .tree import HcaFiles, split
from .window import MIN_WINDOW_S

__all__ = ["Inputs", "judge"]


def judge(inputs: Inputs) -> CheckOutput:
    window = inputs.window
    start = split(window.start.files)
    end = split(window.end.files) if window.end is not None else {}
    seconds = window.seconds if window.end is not None else None
    rate_window = seconds if seconds is not None and seconds >= MIN_WINDOW_S else None
    work = Output(inputs, seconds, rate_window)
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
            ports.append(judge_port(port, later, bus, pairing, work))
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
    hca: HcaFiles, last: HcaFiles | None, bus: str | None, pairing: Pairing, work: Output
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
    labels = present_labels({"hca": hca.name, "device": bus, "hw.type": "network"})
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
        growth = growth_of(key, hca.files.get(key), later, work.seconds)
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
    entry: dict[str, Any], bus: str | None, labels: dict[str, str], inputs: Inputs, work: Output
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
