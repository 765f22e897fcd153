"""The sysfs text parsers and the CQ-overrun line handler over real samples (corpus/infiniband)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sitscheck.checks.infiniband.check import InfinibandCheck
from sitscheck.checks.infiniband.cqlog import CqOverrunLines, parse_overrun
from sitscheck.checks.infiniband.parse import counter, numbered, rate, slot_name
from sitscheck.contract import scan_lines

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ib_tree import CORPUS, load_tsv, uevent


def _values(name: str, leaf: str) -> list[str]:
    return [text for path, text in load_tsv(name).items() if path.endswith(f"/{leaf}")]


def test_states_and_rates_of_the_recorded_trees_parse() -> None:
    states = _values("002-node-exporter-mlx4_0-i40iw0.tsv", "state")
    assert {numbered(s) and (numbered(s).code, numbered(s).name) for s in states} == {(4, "ACTIVE")}  # type: ignore[union-attr]
    phys = numbered(_values("002-node-exporter-mlx4_0-i40iw0.tsv", "phys_state")[0])
    assert phys is not None and (phys.code, phys.name) == (5, "LinkUp")
    rates = sorted(_values("002-node-exporter-mlx4_0-i40iw0.tsv", "rate"))
    assert [rate(r) for r in rates] == [
        rate("10 Gb/sec (4X)"),
        rate("40 Gb/sec (4X QDR)"),
        rate("40 Gb/sec (4X QDR)"),
    ]
    iwarp = rate("10 Gb/sec (4X)")
    assert iwarp is not None and (iwarp.gbps, iwarp.width, iwarp.speed) == (10.0, 4, "")
    qdr = rate("40 Gb/sec (4X QDR)")
    assert qdr is not None and (qdr.gbps, qdr.width, qdr.speed) == (40.0, 4, "QDR")


@pytest.mark.parametrize(
    ("text", "gbps", "width", "speed"),
    [
        ("400 Gb/sec (4X NDR)\n", 400.0, 4, "NDR"),
        ("200 Gb/sec (4X HDR)", 200.0, 4, "HDR"),
        ("25 Gb/sec (1X EDR)", 25.0, 1, "EDR"),  # the recorded CX-4 Lx port (corpus 001)
        ("2.5 Gb/sec (1X SDR)", 2.5, 1, "SDR"),  # rate_show's ".5"
        ("800 Gb/sec (4X XDR)", 800.0, 4, "XDR"),
    ],
)
def test_rate_in_every_speed_the_kernel_prints(
    text: str, gbps: float, width: int, speed: str
) -> None:
    parsed = rate(text)
    assert parsed is not None and (parsed.gbps, parsed.width, parsed.speed) == (gbps, width, speed)


@pytest.mark.parametrize("text", ["", "fast", "400", "Gb/sec (4X NDR)", None])
def test_rate_not_in_the_kernels_format_is_none(text: str | None) -> None:
    assert rate(text) is None


def test_phys_state_names_the_kernel_prints() -> None:
    for text, code, name in [
        ("1: Sleep", 1, "Sleep"),
        ("2: Polling", 2, "Polling"),
        ("3: Disabled", 3, "Disabled"),
        ("4: PortConfigurationTraining", 4, "PortConfigurationTraining"),
        ("6: LinkErrorRecovery", 6, "LinkErrorRecovery"),
        ("7: Phy Test", 7, "Phy Test"),
        ("9: <unknown>", 9, "<unknown>"),
    ]:
        parsed = numbered(text + "\n")
        assert parsed is not None and (parsed.code, parsed.name) == (code, name)
    assert numbered("ACTIVE") is None and numbered(None) is None


def test_counters_and_no_pma() -> None:
    iwarp = _values("002-node-exporter-mlx4_0-i40iw0.tsv", "symbol_error")
    assert "N/A (no PMA)" in iwarp and counter("N/A (no PMA)\n") is None
    assert counter("4294967295\n") == 4294967295
    assert counter("") is None and counter(None) is None and counter("-1") is None


def test_slot_name_from_a_pci_uevent() -> None:
    assert slot_name(uevent("0000:1A:00.0")) == "0000:1a:00.0"
    assert slot_name("DRIVER=mlx5_core\nPCI_SLOT_NAME=0000:33:00.1\n") == "0000:33:00.1"
    assert slot_name("DRIVER=rxe\n") is None and slot_name(None) is None


def _scan(text: str) -> CqOverrunLines:
    interest = InfinibandCheck.kernel_log
    assert interest is not None
    _, results = scan_lines(text.splitlines(), {"infiniband": interest})
    handler = results["infiniband"]
    assert isinstance(handler, CqOverrunLines)
    return handler


def test_the_journal_cq_overrun_is_one_event_on_its_function() -> None:
    found = _scan((CORPUS / "005-journal-mlx5e-cq-overrun-xdp-newbies.txt").read_text())
    assert found.by_bus == {"0000:33:00.1": 1}  # mlx5e's own cqn=0x000954 line is not a second
    (event,) = found.events
    assert event.cqn == "0x954" and event.time is not None and "syndrome 0x1" in event.line


def test_the_patch_logs_overrun() -> None:
    found = _scan((CORPUS / "006-dmesg-mlx5-cq-overrun-ptp-patch.txt").read_text())
    assert found.by_bus == {"0000:08:00.0": 1} and found.events[0].cqn == "0x487"


def test_the_same_overrun_in_every_log_form() -> None:
    line = (CORPUS / "006-dmesg-mlx5-cq-overrun-ptp-patch.txt").read_text().splitlines()[0]
    forms = [
        f"[ 6123.456789] {line}",
        f"[Tue Nov 14 21:58:46 2023] {line}",
        f"kern  :warn  : [ 6123.456789] {line}",
        f"Nov 14 21:58:46 node07 kernel: {line}",
        f"4,2211,6123456789,-;{line}",
    ]
    for form in forms:
        assert _scan(form).by_bus == {"0000:08:00.0": 1}, form


def test_what_is_not_an_overrun() -> None:
    overrun = (CORPUS / "006-dmesg-mlx5-cq-overrun-ptp-patch.txt").read_text().splitlines()[0]
    # an access violation, not an overrun
    assert parse_overrun(overrun.replace("syndrome 0x1", "syndrome 0x2")) is None
    assert parse_overrun("mlx4_core 0000:04:00.0: CQ access violation on CQN 000085") is None
    assert (
        parse_overrun("mlx5_core 0000:08:00.0 eth2: mlx5e_cq_error_event: cqn=0x000487 event=0x04")
        is None
    )
    mlx4 = parse_overrun("mlx4_core 0000:04:00.0: CQ overrun on CQN 000085")
    assert mlx4 is not None and (mlx4.pci_bus_id, mlx4.cqn) == ("0000:04:00.0", "000085")
