"""Whole runs over the recorded 2×H200 bundle with RDMA devices added as the kernel prints them
(tests/infiniband/ib_tree.py): the healthy node, one port down, one port slow, each counter
rate just below, at and just above its threshold (two readings, 3 s apart), a CQ overrun in
the kernel log, and a GPU whose own NIC is down or slow (one diagnosis, the NIC first).

The recorded H200 VM has no InfiniBand; its GPUs sit on the VM's root bus, so here the GPUs
and their NICs are joined through `nvidia-smi topo -m` (the recorded matrix with two NIC
columns and a NIC legend added, as an HGX H100's reads: tests/fixtures/topo).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import Report, Status
from sitscheck.reporters.table import render_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ib_tree import (
    CORPUS,
    DISABLED,
    DOWN,
    H200X2,
    HDR,
    IB,
    POLLING,
    Bundle,
    eight_ndr_hcas,
    mlx4_files,
    paired_bundle,
    pci_device,
)

PORT3 = f"{IB}/mlx5_3/ports/1"
# the run's checks: the node's own (driver, topology) and this one; the healthy case runs all
FEW = ["driver", "topology", "infiniband"]
ONLY = ["infiniband"]  # the counter-rate cases: node rules only


def replay(
    root: Path,
    checks: list[str] | None = None,
    profile: str | None = None,
    ignore: list[str] | None = None,
) -> Report:
    config = RunConfig(
        checks=checks or [],
        profile=profile,
        check_config={"infiniband": {"ignore_ports": ignore}} if ignore else {},
    )
    return execute(RunRequest(config, str(root)))


def ib(report: Report):  # type: ignore[no-untyped-def]
    found = report.check("infiniband")
    assert found is not None
    return found


def above_ok(report: Report) -> tuple[list[str], list[str]]:
    codes = [
        f.code for c in report.checks for f in c.findings if f.severity.as_status() != Status.OK
    ]
    rules = [v.rule for v in report.verdicts if v.status in (Status.WARNING, Status.CRITICAL)]
    return codes, rules


def test_eight_ndr_hcas_active_are_no_problem(tmp_path: Path) -> None:
    report = replay(Bundle.of(tmp_path, eight_ndr_hcas()).write())
    check = ib(report)
    assert check.status == Status.OK and check.findings == []
    assert [p["name"] for p in check.facts["ports"]] == [f"mlx5_{n} port 1" for n in range(8)]
    assert all(p["rate_gbps"] == 400.0 and p["active"] for p in check.facts["ports"])
    assert check.facts["window_s"] == 3.0
    assert report.status == Status.OK, report.headline
    assert above_ok(report) == ([], [])
    assert report.profile == "h200-sxm"
    verdicts = {v.rule: v.status for v in report.verdicts if v.rule.startswith("infiniband.")}
    assert verdicts["infiniband.rate_below_profile"] == Status.OK
    assert verdicts["infiniband.retransmit_rate"] == Status.OK


def test_one_port_down_is_one_critical_finding_naming_it(tmp_path: Path) -> None:
    bundle = Bundle.of(tmp_path, eight_ndr_hcas())
    for reading in (bundle.start, bundle.end):
        reading.update({f"{PORT3}/state": DOWN, f"{PORT3}/phys_state": POLLING})
    report = replay(bundle.write(), FEW)
    check = ib(report)
    assert check.status == Status.CRITICAL
    (finding,) = check.findings
    assert finding.code == "infiniband.port_down" and finding.severity.value == "critical"
    assert "mlx5_3 port 1" in finding.message and finding.device is not None
    assert finding.device.name == "mlx5_3 port 1" and finding.device.pci_bus_id == "0000:00:0d.0"
    assert above_ok(report) == (["infiniband.port_down"], [])  # nothing on the other seven
    assert report.status == Status.CRITICAL


def test_one_port_at_hdr_is_a_warning_naming_it(tmp_path: Path) -> None:
    bundle = Bundle.of(tmp_path, eight_ndr_hcas())
    for reading in (bundle.start, bundle.end):
        reading[f"{IB}/mlx5_5/ports/1/rate"] = HDR
    report = replay(bundle.write(), FEW)
    assert above_ok(report) == ([], ["infiniband.rate_below_profile"])
    (verdict,) = [v for v in report.verdicts if v.rule == "infiniband.rate_below_profile"]
    assert verdict.status == Status.WARNING and "mlx5_5 port 1" in verdict.message
    assert "200 Gb/sec (4X HDR)" in verdict.message and "400" in verdict.message
    assert report.status == Status.WARNING


def test_the_rate_follows_the_profile(tmp_path: Path) -> None:
    a100 = ""
    text = (CORPUS / "004-ibstatus-a100-hdr-all-active.txt").read_text()
    from ib_tree import ibstatus_to_sysfs

    root = Bundle.of(tmp_path, ibstatus_to_sysfs(text)).write()
    for profile, fired in (("a100-sxm-80gb", False), ("h200-sxm", True)):
        report = replay(root, FEW, profile=profile)
        (verdict,) = [v for v in report.verdicts if v.rule == "infiniband.rate_below_profile"]
        assert (verdict.status == Status.WARNING) is fired, profile + a100
        if fired:  # the eight HDR InfiniBand ports; the 40 Gb/s Ethernet port is no IB port
            assert verdict.message.startswith("8 InfiniBand port(s) below the 400 Gb/s")
    # a profile that gives no rate judges none, and says so
    report = replay(root, FEW, profile="h100-pcie")
    rules = {v.rule: v for v in report.verdicts}
    assert rules["infiniband.rate_below_profile"].status == Status.OK
    assert "sets no ib_rate_gbps" in rules["infiniband.rate_not_judged"].message


def test_the_recorded_h100_nodes_disabled_ethernet_ports_are_no_problem(tmp_path: Path) -> None:
    from ib_tree import ibstat_to_sysfs

    files = ibstat_to_sysfs((CORPUS / "003-ibstat-h100-12hca-some-down.txt").read_text())
    report = replay(Bundle.of(tmp_path, files).write(), FEW)
    assert above_ok(report) == ([], [])
    assert [f.code for f in ib(report).findings] == ["infiniband.port_disabled"] * 3


H200X4 = H200X2.parent / "h200x4-idle"  # a VM holding 4 of an HGX H200's 8 GPUs


def _rails(tmp_path: Path, hcas: int = 4, disabled: str | None = "mlx5_3") -> Path:
    """The 4-GPU H200 bundle with `hcas` NDR HCAs, one port each (`disabled` switched off)."""
    files = {k: v for k, v in eight_ndr_hcas().items() if not k.startswith(_beyond(hcas))}
    bundle = Bundle.of(tmp_path, files, source=H200X4)
    if disabled is not None:
        for reading in (bundle.start, bundle.end):
            port = f"{IB}/{disabled}/ports/1"
            reading.update({f"{port}/state": DOWN, f"{port}/phys_state": DISABLED})
    return bundle.write()


def _beyond(hcas: int) -> tuple[str, ...]:
    return tuple(f"{IB}/mlx5_{n}/" for n in range(hcas, 8))


def test_a_disabled_rail_on_a_node_that_needs_it_is_critical_naming_it(tmp_path: Path) -> None:
    """Issue 29 item 15: a port switched off (phys_state 3: Disabled) is the check's info, as
    on an unused port; on a node whose profile gives each GPU its rail (`ib_ports`: 8 on an
    h200-sxm board) four GPUs need four active InfiniBand ports: three is a lost rail, a
    critical verdict naming the port. A profile without `ib_ports` leaves it info."""
    root = _rails(tmp_path)
    report = replay(root, FEW)
    findings = [(f.code, f.severity.value) for f in ib(report).findings]
    assert findings == [("infiniband.port_disabled", "info")]
    assert above_ok(report) == ([], ["infiniband.compute_rail_lost"])
    (verdict,) = [v for v in report.verdicts if v.rule == "infiniband.compute_rail_lost"]
    assert verdict.status == Status.CRITICAL and report.status == Status.CRITICAL
    assert verdict.message.startswith("3 of the 4 InfiniBand compute ports the node's GPUs need")
    assert "(one per GPU, 8 on a h200-sxm board)" in verdict.message
    assert "mlx5_3 port 1 (Disabled)" in verdict.message
    assert "infiniband.port_disabled" in verdict.explains
    report = replay(root, FEW, profile="a100-sxm-80gb")  # sets no ib_ports
    assert above_ok(report) == ([], []) and report.status == Status.OK
    # a rail gone from /sys (its HCA off the bus) is lost as well
    report = replay(_rails(tmp_path / "gone", hcas=3, disabled=None), FEW)
    assert above_ok(report) == ([], ["infiniband.compute_rail_lost"])


def test_ports_that_are_no_compute_rail_do_not_count(tmp_path: Path) -> None:
    """Only active InfiniBand ports are rails: a fifth port switched off (a storage HCA,
    ignored or not) leaves the four GPUs their four; so does a port disabled among eight on
    the 2-GPU node (two needed), and the recorded H100 node's disabled Ethernet ports (test
    above). A port in ignore_ports counts for nothing, not even a rail: a node with fewer rails
    by design says so in its site profile (`ib_ports`)."""
    fifth = _rails(tmp_path / "fifth", hcas=5, disabled="mlx5_4")
    for ignore in (None, ["mlx5_4"]):
        assert above_ok(replay(fifth, FEW, ignore=ignore)) == ([], [])
    two = Bundle.of(tmp_path / "two", eight_ndr_hcas())
    for reading in (two.start, two.end):
        reading.update({f"{PORT3}/state": DOWN, f"{PORT3}/phys_state": DISABLED})
    assert above_ok(replay(two.write(), FEW)) == ([], [])
    report = replay(_rails(tmp_path / "ignored"), FEW, ignore=["mlx5_3"])
    assert ib(report).findings == [] and ib(report).facts["ignored_ports"] == ["mlx5_3 port 1"]
    assert above_ok(report) == ([], ["infiniband.compute_rail_lost"])


# --- counter rates over the window: just below, at, just above the threshold ------------
WINDOW_S = 3.0


def _rate_bundle(tmp_path: Path, name: str) -> Bundle:
    return Bundle.of(tmp_path / name, eight_ndr_hcas())


@pytest.mark.parametrize(
    ("retransmits", "fired"),
    [(4999, False), (5000, False), (5001, True)],  # of 1,000,000 packets: 0.4999 / 0.5 / 0.5001 %
)
def test_retransmit_rate_against_the_seeds_half_percent(
    tmp_path: Path, retransmits: int, fired: bool
) -> None:
    bundle = _rate_bundle(tmp_path, str(retransmits))
    bundle.grow("mlx5_2", "counters/port_xmit_packets", 1_000_000)
    bundle.grow("mlx5_2", "hw_counters/local_ack_timeout_err", retransmits - 1)
    bundle.grow("mlx5_2", "hw_counters/packet_seq_err", 1)
    report = replay(bundle.write(), ONLY)
    port = next(p for p in ib(report).facts["ports"] if p["hca"] == "mlx5_2")
    assert port["retransmits"] == retransmits and port["xmit_packets"] == 1_000_000
    assert above_ok(report) == ([], ["infiniband.retransmit_rate"] if fired else [])
    if fired:
        (verdict,) = [v for v in report.verdicts if v.rule == "infiniband.retransmit_rate"]
        assert "mlx5_2 port 1" in verdict.message and "0.5001 %" in verdict.message


def test_retransmits_of_a_nearly_idle_port_are_no_rate(tmp_path: Path) -> None:
    bundle = _rate_bundle(tmp_path, "idle")
    bundle.grow("mlx5_2", "counters/port_xmit_packets", 9_999)  # under the 10,000 packets
    bundle.grow("mlx5_2", "hw_counters/local_ack_timeout_err", 500)  # 5 %
    assert above_ok(replay(bundle.write(), ONLY)) == ([], [])


@pytest.mark.parametrize(("errors", "fired"), [(29, False), (30, False), (31, True)])  # 10/s
def test_symbol_error_rate(tmp_path: Path, errors: int, fired: bool) -> None:
    bundle = _rate_bundle(tmp_path, str(errors))
    bundle.grow("mlx5_6", "counters/symbol_error", errors)
    report = replay(bundle.write(), ONLY)
    port = next(p for p in ib(report).facts["ports"] if p["hca"] == "mlx5_6")
    assert port["symbol_error_per_s"] == round(errors / WINDOW_S, 3)
    assert above_ok(report) == ([], ["infiniband.symbol_error_rate"] if fired else [])


def _mlx4_bundle(tmp_path: Path, overflows: int) -> Path:
    """The recorded ConnectX-3 (corpus 002, mlx4) with its device-level num_cqovf counter."""
    files = mlx4_files("0000:00:0a.0")
    files.update(pci_device("devices/pci0000:00/0000:00:0a.0", "0x15b3", "0x1007", "0x020700"))
    bundle = Bundle.of(tmp_path / str(overflows), files)
    bundle.end[f"{IB}/mlx4_0/hw_counters/num_cqovf"] = str(17 + overflows)
    return bundle.write()


@pytest.mark.parametrize(("overflows", "fired"), [(359, False), (360, False), (361, True)])  # 120/s
def test_cq_overflow_rate(tmp_path: Path, overflows: int, fired: bool) -> None:
    report = replay(_mlx4_bundle(tmp_path, overflows), ONLY)
    hca = ib(report).facts["hcas"][0]
    assert hca["cq_overflows"] == overflows
    assert hca["cq_overflow_per_s"] == round(overflows / WINDOW_S, 3)
    # (without the driver check no profile is picked: the QDR port's rate is not judged here)
    assert above_ok(report) == ([], ["infiniband.cq_overflow_rate"] if fired else [])


def test_a_bundle_with_one_reading_judges_state_not_growth(tmp_path: Path) -> None:
    bundle = Bundle.of(tmp_path, eight_ndr_hcas())
    bundle.window_s = None
    report = replay(bundle.write(), ONLY)
    check = ib(report)
    assert check.status == Status.OK and check.facts["window_s"] is None
    assert any("the bundle holds one reading" in n for n in check.not_judged)
    assert all("symbol_error_per_s" not in p for p in check.facts["ports"])


def test_a_cq_overrun_in_the_kernel_log_names_its_hca(tmp_path: Path) -> None:
    root = Bundle.of(tmp_path, eight_ndr_hcas()).write()
    line = (CORPUS / "006-dmesg-mlx5-cq-overrun-ptp-patch.txt").read_text().splitlines()[0]
    with (root / "dmesg.txt").open("a") as log:  # mlx5_4's function, as a /dev/kmsg record
        log.write("4,371,3954990,-;" + line.replace("0000:08:00.0", "0000:00:0e.0") + "\n")
    check = ib(replay(root, ONLY))
    (finding,) = check.findings
    assert finding.code == "infiniband.cq_overrun" and "mlx5_4" in finding.message
    assert finding.kind == "event" and "CQN 0x487" in finding.message
    hcas = {h["name"]: h["cq_overruns_logged"] for h in check.facts["hcas"]}
    assert hcas["mlx5_4"] == 1 and sum(hcas.values()) == 1


# --- a GPU and its NIC ----------------------------------------------------------------------
def test_the_paired_topology_reads_each_gpus_nic(tmp_path: Path) -> None:
    report = replay(paired_bundle(tmp_path).write(), FEW)
    topo = report.check("topology")
    assert topo is not None and topo.status == Status.OK, topo
    nearest = {g["index"]: (g["nearest_nic"], g["nearest_nic_kind"]) for g in topo.facts["per_gpu"]}
    assert nearest == {0: ("mlx5_0", "PXB"), 1: ("mlx5_1", "PXB")}
    assert above_ok(report) == ([], [])


def test_a_gpus_nic_down_is_one_diagnosis_with_the_nic_as_cause(tmp_path: Path) -> None:
    bundle = paired_bundle(tmp_path)
    for reading in (bundle.start, bundle.end):
        reading.update(
            {f"{IB}/mlx5_1/ports/1/state": DOWN, f"{IB}/mlx5_1/ports/1/phys_state": POLLING}
        )
    report = replay(bundle.write(), FEW)
    codes, rules = above_ok(report)
    # the node's lost rail (one of its two GPUs' two) is this GPU's NIC: explained by it
    assert codes == ["infiniband.port_down"]
    assert rules == ["infiniband.compute_rail_lost", "infiniband.gpu_nic_down"]
    (rail,) = [v for v in report.verdicts if v.rule == "infiniband.compute_rail_lost"]
    assert rail.explained_by == ["infiniband.gpu_nic_down"]
    (verdict,) = [v for v in report.verdicts if v.rule == "infiniband.gpu_nic_down" and v.device]
    assert verdict.status == Status.CRITICAL and verdict.device is not None
    assert verdict.device.index == 1 and "mlx5_1 port 1" in verdict.message
    assert "infiniband.port_down" in verdict.explains
    table = render_table(report, verbose=False)
    diagnosis = table.split("diagnosis (root cause first):", 1)[1].split("checks:", 1)[0]
    assert "GPU 1: its NIC mlx5_1 port 1 is DOWN" in diagnosis
    assert "GPU 0" not in diagnosis.split("action:", 1)[0]


def test_a_gpus_nic_slow_explains_the_rate_verdict(tmp_path: Path) -> None:
    bundle = paired_bundle(tmp_path)
    for reading in (bundle.start, bundle.end):
        reading[f"{IB}/mlx5_0/ports/1/rate"] = HDR
    report = replay(bundle.write(), FEW)
    assert above_ok(report) == ([], ["infiniband.rate_below_profile", "infiniband.gpu_nic_slow"])
    slow = [v for v in report.verdicts if v.rule == "infiniband.gpu_nic_slow" and v.device]
    assert [v.device.index for v in slow if v.device] == [0]
    (rate,) = [v for v in report.verdicts if v.rule == "infiniband.rate_below_profile"]
    assert rate.explained_by == ["infiniband.gpu_nic_slow"]
