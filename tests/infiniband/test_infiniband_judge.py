"""judge.py over real trees (corpus/infiniband) and small edits of them: what each reading
gives, what grows, what cannot be judged, and what must not be found."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec
from sitscheck.checks.infiniband.facts import Facts, Settings
from sitscheck.checks.infiniband.judge import Inputs, judge
from sitscheck.checks.infiniband.pairing import Pairing, common_depth, pair
from sitscheck.checks.infiniband.window import Reading, Window
from sitscheck.contract import CheckOutput
from sitscheck.sources.pci import upstream_chain

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ib_tree import (
    CORPUS,
    DISABLED,
    DOWN,
    HDR,
    IB,
    POLLING,
    hca_files,
    ibstat_to_sysfs,
    ibstatus_to_sysfs,
    load_tsv,
)

PORT = f"{IB}/mlx5_0/ports/1"


def run(
    start: dict[str, str],
    end: dict[str, str] | None = None,
    seconds: float | None = 3.0,
    **extra: Any,
) -> CheckOutput:
    window = Window(
        Reading(dict(start)),
        Reading(dict(end if end is not None else start)) if seconds is not None else None,
        seconds,
        None if seconds is not None else "read once",
    )
    out = judge(Inputs(window=window, source="/sys", **extra))
    msgspec.convert(out.facts, Facts)  # the facts are what the model declares, always
    return out


def port(out: CheckOutput, name: str = "mlx5_0 port 1") -> dict[str, Any]:
    (found,) = [p for p in out.facts["ports"] if p["name"] == name]
    return found


def codes(out: CheckOutput) -> list[str]:
    return [f.code for f in out.findings]


def one_ndr() -> dict[str, str]:
    return hca_files("mlx5_0", "0000:1a:00.0")


def test_a_healthy_ndr_port_gives_facts_and_no_finding() -> None:
    out = run(one_ndr())
    assert out.findings == []
    p = port(out)
    assert (p["state"], p["phys_state"], p["active"], p["rate_gbps"]) == (
        "ACTIVE",
        "LinkUp",
        True,
        400.0,
    )
    assert p["pci_bus_id"] == "0000:1a:00.0" and p["link_layer"] == "InfiniBand"
    # the recorded counters, read as numbers; nothing moved
    assert p["totals"]["counters/port_xmit_data"] == 2880761508848
    assert p["totals"]["hw_counters/local_ack_timeout_err"] == 131
    assert set(p["deltas"].values()) == {0}
    assert p["symbol_error_per_s"] == 0.0 and p["retransmits"] == 0 and p["xmit_packets"] == 0
    assert "retransmit_pct" not in p  # no packet sent: no rate
    hca = out.facts["hcas"][0]
    assert (hca["hca_type"], hca["fw_ver"]) == ("MT4129", "28.39.1002")


def test_the_recorded_tree_that_no_kernel_prints_is_not_read_as_up() -> None:
    # corpus 001's fixture says phys_state "4: ACTIVE": code 4 is PortConfigurationTraining
    files = load_tsv("001-procfs-mlx5_0-mt4118.tsv")
    out = run(files)
    p = port(out)
    assert p["phys_state_code"] == 4 and p["active"] is False
    assert codes(out) == ["infiniband.port_down"]
    assert p["pci_bus_id"] is None  # the fixture has no device/uevent: said, not guessed
    assert any("no PCI function" in n and "mlx5_0" in n for n in out.not_judged)


def test_mlx4_saturated_and_extended_counters() -> None:
    out = run(load_tsv("002-node-exporter-mlx4_0-i40iw0.tsv"))
    p1 = port(out, "mlx4_0 port 1")
    assert p1["saturated"] == ["counters/port_xmit_wait"]  # 4294967295: stuck, growth unknown
    assert "counters/port_xmit_wait" not in p1["deltas"]
    assert p1["rate_gbps"] == 40.0 and p1["active"] is True
    # port 2 has no error counters: its rates are said to be unjudged, not zero
    p2 = port(out, "mlx4_0 port 2")
    assert "symbol_error_per_s" not in p2
    assert any(
        n.startswith("symbol_error rate: the port has no readable counter") and "mlx4_0 port 2" in n
        for n in out.not_judged
    )
    # mlx4 has no mlx5 retransmission counters: not judged, and said so
    assert any(
        n.startswith("retransmit rate: no mlx5 retransmission") and "mlx4_0 port 1" in n
        for n in out.not_judged
    )
    assert out.findings == []


def test_iwarp_without_pma_reads_nothing_it_cannot() -> None:
    out = run(load_tsv("002-node-exporter-mlx4_0-i40iw0.tsv"))
    p = port(out, "i40iw0 port 1")
    assert "counters/symbol_error" in p["unreadable"] and p["totals"] == {}
    assert p["rate_gbps"] == 10.0
    metrics = [m for m in out.metrics if m.labels.get("hca") == "i40iw0"]
    assert {m.name for m in metrics} == {"hw.network.up", "hw.network.bandwidth.limit"}


def test_the_recorded_h100_node_has_three_disabled_ethernet_ports_and_nothing_wrong() -> None:
    files = ibstat_to_sysfs((CORPUS / "003-ibstat-h100-12hca-some-down.txt").read_text())
    out = run(files)
    ports = {p["name"]: p for p in out.facts["ports"]}
    assert len(ports) == 12
    ib = [p for p in ports.values() if p["link_layer"] == "InfiniBand"]
    assert len(ib) == 8 and all(p["active"] and p["rate_gbps"] == 400.0 for p in ib)
    disabled = sorted(f.device.name for f in out.findings if f.device is not None)
    assert codes(out) == ["infiniband.port_disabled"] * 3
    assert all(f.severity.value == "info" for f in out.findings)
    assert all(ports[name]["link_layer"] == "Ethernet" for name in disabled)


def test_the_recorded_a100_node_reads_hdr() -> None:
    out = run(ibstatus_to_sysfs((CORPUS / "004-ibstatus-a100-hdr-all-active.txt").read_text()))
    ports = out.facts["ports"]
    assert len(ports) == 9 and out.findings == []
    assert sorted({(p["link_layer"], p["rate_gbps"]) for p in ports}) == [
        ("Ethernet", 40.0),
        ("InfiniBand", 200.0),
    ]


def test_a_port_down_names_itself_and_why() -> None:
    files = one_ndr()
    files.update({f"{PORT}/state": DOWN, f"{PORT}/phys_state": POLLING})
    out = run(files)
    (finding,) = out.findings
    assert finding.code == "infiniband.port_down" and finding.severity.value == "critical"
    assert finding.device is not None
    assert (finding.device.pci_bus_id, finding.device.name, finding.device.index) == (
        "0000:1a:00.0",
        "mlx5_0 port 1",
        None,
    )
    assert "mlx5_0 port 1" in finding.message and "1: DOWN" in finding.message
    assert "2: Polling" in finding.message


def test_a_port_that_went_down_during_the_window_is_judged_by_its_end() -> None:
    start = one_ndr()
    end = dict(start) | {f"{PORT}/state": DOWN, f"{PORT}/phys_state": POLLING}
    out = run(start, end)
    assert codes(out) == ["infiniband.port_down"]
    assert port(out)["state_at_start"] == "ACTIVE"
    assert "it was ACTIVE when the window began" in out.findings[0].message
    # and one that came up is healthy
    assert run(end, start).findings == []


def test_disabled_is_info_not_down() -> None:
    files = one_ndr() | {f"{PORT}/state": DOWN, f"{PORT}/phys_state": DISABLED}
    out = run(files)
    assert codes(out) == ["infiniband.port_disabled"] and port(out)["disabled"] is True


def test_link_counters_that_must_not_move() -> None:
    start = one_ndr()
    for name, code in [
        ("link_downed", "infiniband.link_errors_grew"),
        ("local_link_integrity_errors", "infiniband.link_errors_grew"),
        ("excessive_buffer_overrun_errors", "infiniband.link_errors_grew"),
        ("link_error_recovery", "infiniband.link_recovered"),
    ]:
        end = dict(start) | {f"{PORT}/counters/{name}": "1"}
        out = run(start, end)
        assert codes(out) == [code], name
        assert (
            f"{name} +1" in out.findings[0].message or "retrained 1 time" in out.findings[0].message
        )
        # read once, nothing can be said to grow
        assert run(end, seconds=None).findings == []


def test_a_counter_lower_at_the_end_is_a_reset_not_growth() -> None:
    start = one_ndr() | {
        f"{PORT}/counters/symbol_error": "500",
        f"{PORT}/counters/link_downed": "3",
    }
    end = dict(start) | {f"{PORT}/counters/symbol_error": "0", f"{PORT}/counters/link_downed": "0"}
    out = run(start, end)
    p = port(out)
    assert p["went_back"] == ["counters/link_downed", "counters/symbol_error"]
    assert out.findings == [] and "symbol_error_per_s" not in p
    assert any("symbol_error rate: the counter went back" in n for n in out.not_judged)


def test_a_counter_that_reached_its_maximum_still_shows_its_growth() -> None:
    start = one_ndr() | {f"{PORT}/counters/link_downed": "250"}
    end = dict(start) | {f"{PORT}/counters/link_downed": "255"}  # 8 bits: stuck from now on
    out = run(start, end)
    assert codes(out) == ["infiniband.link_errors_grew"]
    assert port(out)["saturated"] == ["counters/link_downed"]


def test_retransmit_rate_is_per_packet_sent() -> None:
    start = one_ndr()
    end = dict(start) | {
        f"{PORT}/counters/port_xmit_packets": str(10907922116 + 200_000),
        f"{PORT}/hw_counters/local_ack_timeout_err": str(131 + 600),
        f"{PORT}/hw_counters/packet_seq_err": str(1 + 400),
    }
    p = port(run(start, end))
    assert (p["xmit_packets"], p["retransmits"], p["retransmit_pct"]) == (200_000, 1000, 0.5)


def test_retransmits_fall_back_to_the_64_bit_packets_when_the_32_bit_is_stuck() -> None:
    start = one_ndr() | {
        f"{PORT}/counters/port_xmit_packets": "4294967295",
        f"{PORT}/counters_ext/port_xmit_packets_64": "90000000000",
    }
    end = dict(start) | {
        f"{PORT}/counters_ext/port_xmit_packets_64": "90000100000",
        f"{PORT}/hw_counters/duplicate_request": str(41 + 10),
    }
    p = port(run(start, end))
    assert (p["xmit_packets"], p["retransmits"]) == (100_000, 10)


def test_rates_need_a_window_of_a_second() -> None:
    start = one_ndr()
    end = dict(start) | {f"{PORT}/counters/symbol_error": "5"}
    out = run(start, end, seconds=0.5)
    assert "symbol_error_per_s" not in port(out)
    assert any("under 1.0 s" in n for n in out.not_judged)
    assert port(run(start, end, seconds=2.0))["symbol_error_per_s"] == 2.5


def test_cq_overflow_counter_of_an_mlx4_device() -> None:
    start = one_ndr() | {f"{IB}/mlx5_0/hw_counters/num_cqovf": "1000"}
    end = dict(start) | {f"{IB}/mlx5_0/hw_counters/num_cqovf": "1363"}
    out = run(start, end)
    hca = out.facts["hcas"][0]
    assert (hca["cq_overflow_counter"], hca["cq_overflows"], hca["cq_overflow_per_s"]) == (
        "hw_counters/num_cqovf",
        363,
        121.0,
    )
    assert not any("CQ overflow rate" in n for n in out.not_judged)


def test_ignored_ports_are_left_out_and_listed() -> None:
    files = one_ndr() | hca_files("mlx5_8", "0000:9a:00.0", state=DOWN, phys=POLLING, rate=HDR)
    out = run(files, settings=Settings(ignore_ports=["mlx5_8"]))
    assert out.findings == [] and out.facts["ignored_ports"] == ["mlx5_8 port 1"]
    assert [p["name"] for p in out.facts["ports"]] == ["mlx5_0 port 1"]
    assert codes(run(files, settings=Settings(ignore_ports=["mlx5_8/2"]))) == [
        "infiniband.port_down"
    ]


def test_ports_are_in_natural_order() -> None:
    files: dict[str, str] = {}
    for n in (10, 2, 0, 1):
        files |= hca_files(f"mlx5_{n}", f"0000:{0x10 + n:02x}:00.0")
    names = [p["hca"] for p in run(files).facts["ports"]]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10"]


def test_metrics_name_the_port_and_its_pci_function() -> None:
    out = run(one_ndr())
    by_name = {
        (m.name, m.labels.get("network.io.direction", m.labels.get("error.type", ""))): m
        for m in out.metrics
    }
    io = by_name[("hw.network.io", "transmit")]
    assert io.value == 2880761508848 * 4 and io.unit == "By"  # PortXmitData counts 4-byte words
    assert io.labels["hca"] == "mlx5_0" and io.labels["port"] == "1"
    assert io.labels["device"] == "0000:1a:00.0" and io.labels["hw.type"] == "network"
    assert by_name[("hw.network.bandwidth.limit", "")].value == 50e9  # 400 Gb/s in bytes/s
    assert by_name[("hw.network.up", "")].value == 1
    assert by_name[("hw.errors", "symbol_error")].value == 0
    assert by_name[("hw.network.packets", "receive")].value == 541889824


def test_roce_congestion_counters_are_metrics() -> None:
    files = one_ndr() | {
        f"{PORT}/link_layer": "Ethernet",
        f"{PORT}/hw_counters/np_cnp_sent": "77",
        f"{PORT}/hw_counters/rp_cnp_handled": "12",
        f"{PORT}/hw_counters/np_ecn_marked_roce_packets": "90",
    }
    out = run(files)
    cong = {
        m.labels["counter"]: m.value
        for m in out.metrics
        if m.name == "sitscheck.infiniband.roce.congestion"
    }
    assert cong == {"np_cnp_sent": 77, "rp_cnp_handled": 12, "np_ecn_marked_roce_packets": 90}
    assert out.findings == []


# --- the PCIe pairing ---------------------------------------------------------------------
# Shaped after the DGX H100 user guide's table (GPU0 ↔ mlx5_0 at ibp24s0, bus 0x18; the GPU at
# bus 0x1b): both below the ConnectX-7's switch on root port 0000:15:01.0. Bridge bus numbers
# between them are illustrative.
NIC0 = "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0"
GPU0 = (
    "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/0000:1a:00.0"
    "/0000:1b:00.0"
)
NIC1 = "devices/pci0000:3d/0000:3d:01.0/0000:3e:00.0/0000:3f:00.0/0000:40:00.0"
GPU1 = (
    "devices/pci0000:3d/0000:3d:01.0/0000:3e:00.0/0000:3f:01.0/0000:41:00.0/0000:42:00.0"
    "/0000:43:00.0"
)


def test_each_nic_pairs_with_the_gpu_behind_its_switch() -> None:
    hcas = {"mlx5_0": upstream_chain(NIC0), "mlx5_3": upstream_chain(NIC1)}
    gpus = {"0000:1b:00.0": upstream_chain(GPU0), "0000:43:00.0": upstream_chain(GPU1)}
    assert pair(hcas, gpus) == {
        "mlx5_0": Pairing(("0000:1b:00.0",), "0000:16:00.0"),
        "mlx5_3": Pairing(("0000:43:00.0",), "0000:3e:00.0"),
    }
    assert common_depth(upstream_chain(NIC0), upstream_chain(GPU1)) == 0


def test_devices_on_a_vms_root_bus_pair_with_nothing() -> None:
    hcas = {"mlx5_0": upstream_chain("devices/pci0000:00/0000:00:0a.0")}
    gpus = {"0000:00:06.0": upstream_chain("devices/pci0000:00/0000:00:06.0")}
    assert pair(hcas, gpus) == {"mlx5_0": Pairing((), None)}


def test_the_gpu_facts_list_their_nics() -> None:
    out = run(
        one_ndr(),
        pairing={"mlx5_0": Pairing(("0000:1b:00.0",), "0000:16:00.0")},
        gpu_buses=["0000:1b:00.0", "0000:43:00.0"],
    )
    assert out.facts["gpus"] == [
        {
            "pci_bus_id": "0000:1b:00.0",
            "hcas": ["mlx5_0"],
            "ports": ["mlx5_0 port 1"],
            "common_port": "0000:16:00.0",
        },
        {"pci_bus_id": "0000:43:00.0", "hcas": [], "ports": [], "common_port": None},
    ]
    assert port(out)["gpus"] == ["0000:1b:00.0"]
