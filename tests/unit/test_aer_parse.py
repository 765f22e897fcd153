"""sitscheck.checks.pcie_aer.parse on reports written as kernels print them (drivers/pci/pcie/aer.c
and drivers/firmware/efi/cper.c wording of each era), beyond the shared corpus."""

# Log samples are kept verbatim, as wide as the kernel printed them.
# ruff: noqa: E501

from __future__ import annotations

import pytest
from sitscheck.checks.pcie_aer.parse import AerEvent, might_be_aer, parse_aer
from sitscheck.kernlog.lines import iter_kernel_lines


def facts(text: str) -> list[dict[str, object]]:
    raw = text.strip("\n").splitlines()
    return [event.to_fact() for event in parse_aer(iter_kernel_lines(raw))]


def event(
    reporter: str | None,
    device: str | None,
    vendor_device: str | None,
    severity: str,
    type_: str | None,
    errors: list[str],
    multiple: bool = False,
    time: str | None = None,
) -> dict[str, object]:
    return {
        "reporter": reporter,
        "device": device,
        "vendor_device": vendor_device,
        "severity": severity,
        "type": type_,
        "errors": errors,
        "multiple": multiple,
        "time": time,
    }


# 6.x, read from /dev/kmsg directly: every record followed by its dictionary lines.
KMSG_CORRECTABLE_H100 = """
4,2871,512100200,-;pcieport 0000:97:01.0: AER: Correctable error message received from 0000:98:00.0
 SUBSYSTEM=pci
 DEVICE=+pci:0000:97:01.0
4,2872,512100215,-;nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)
 SUBSYSTEM=pci
 DEVICE=+pci:0000:98:00.0
4,2873,512100221,-;nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000001/0000e000
 SUBSYSTEM=pci
 DEVICE=+pci:0000:98:00.0
4,2874,512100226,-;nvidia 0000:98:00.0:    [ 0] RxErr                  (First)
 SUBSYSTEM=pci
 DEVICE=+pci:0000:98:00.0
"""


def test_kmsg_records_with_dictionary_lines() -> None:
    assert facts(KMSG_CORRECTABLE_H100) == [
        event(
            "0000:97:01.0",
            "0000:98:00.0",
            "10de:2330",
            "corrected",
            "Physical Layer",
            ["RxErr"],
            time="512.100200",
        ),
    ]


# 6.x non-fatal on an H200 behind a switch port; NVRM and nvme lines land in the middle.
NONFATAL_H200_INTERLEAVED = """
[ 9021.377104] pcieport 0000:15:01.0: AER: Uncorrectable (Non-Fatal) error message received from 0000:1b:00.0
[ 9021.377131] nvidia 0000:1b:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Requester ID)
[ 9021.377133] NVRM: GPU at PCI:0000:1b:00: GPU-3c1f9d2e-7a41-5b0e-9f6c-0d2b8a4e1f77
[ 9021.377140] nvidia 0000:1b:00.0:   device [10de:2335] error status/mask=00004000/00400000
[ 9021.377142] nvme nvme2: I/O 731 QID 17 timeout, completion polled
[ 9021.377146] nvidia 0000:1b:00.0:    [14] CmpltTO                (First)
[ 9021.389512] pcieport 0000:15:01.0: AER: device recovery failed
"""


def test_nonfatal_on_h200_with_other_messages_in_between() -> None:
    assert facts(NONFATAL_H200_INTERLEAVED) == [
        event(
            "0000:15:01.0",
            "0000:1b:00.0",
            "10de:2335",
            "nonfatal",
            "Transaction Layer",
            ["CmpltTO"],
            time="9021.377104",
        ),
    ]


# 6.x fatal from a GPU endpoint: the kernel does not read the endpoint's registers for
# ERR_FATAL, so it prints "type=Inaccessible, (Unregistered Agent ID)".
FATAL_H200_INACCESSIBLE = """
[12044.100512] pcieport 0000:15:01.0: AER: Uncorrectable (Fatal) error message received from 0000:1b:00.0
[12044.100547] nvidia 0000:1b:00.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Inaccessible, (Unregistered Agent ID)
[12044.251873] pcieport 0000:15:01.0: AER: Downstream Port link has been reset (0)
[12044.251911] pcieport 0000:15:01.0: AER: device recovery failed
"""


def test_fatal_on_gpu_endpoint_with_inaccessible_registers() -> None:
    assert facts(FATAL_H200_INACCESSIBLE) == [
        event("0000:15:01.0", "0000:1b:00.0", None, "fatal", None, [], time="12044.100512"),
    ]


# Firmware-first fatal record for an H200 (cper_print_pcie prints the AER registers for fatal).
GHES_FATAL_H200 = """
[ 7101.002211] {2}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 2
[ 7101.002213] {2}[Hardware Error]: event severity: fatal
[ 7101.002214] {2}[Hardware Error]:  Error 0, type: fatal
[ 7101.002215] {2}[Hardware Error]:   section_type: PCIe error
[ 7101.002216] {2}[Hardware Error]:   port_type: 0, PCIe end point
[ 7101.002217] {2}[Hardware Error]:   version: 4.0
[ 7101.002218] {2}[Hardware Error]:   command: 0x0006, status: 0x0010
[ 7101.002219] {2}[Hardware Error]:   device_id: 0000:1b:00.0
[ 7101.002220] {2}[Hardware Error]:   slot: 0
[ 7101.002221] {2}[Hardware Error]:   secondary_bus: 0x00
[ 7101.002222] {2}[Hardware Error]:   vendor_id: 0x10de, device_id: 0x2335
[ 7101.002223] {2}[Hardware Error]:   class_code: 030200
[ 7101.002224] {2}[Hardware Error]:   aer_cor_status: 0x00000000, aer_cor_mask: 0x0000e000
[ 7101.002225] {2}[Hardware Error]:   aer_uncor_status: 0x00004000, aer_uncor_mask: 0x00400000
[ 7101.002226] {2}[Hardware Error]:   aer_uncor_severity: 0x00462030
[ 7101.002227] {2}[Hardware Error]:   TLP Header: 40000001 0000000f 9c000000 00000000
[ 7101.002301] Kernel panic - not syncing: Fatal hardware error!
"""


def test_firmware_first_fatal_decodes_uncorrectable_status() -> None:
    assert facts(GHES_FATAL_H200) == [
        event(None, "0000:1b:00.0", "10de:2335", "fatal", None, ["CmpltTO"], time="7101.002211"),
    ]


# 5.x firmware-first corrected record, then the kernel's own print of it (pci_print_aer).
GHES_CORRECTED_WITH_KERNEL_PRINT = """
[ 5014.119511] {3}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 4
[ 5014.119513] {3}[Hardware Error]: It has been corrected by h/w and requires no further action
[ 5014.119514] {3}[Hardware Error]: event severity: corrected
[ 5014.119515] {3}[Hardware Error]:  Error 0, type: corrected
[ 5014.119516] {3}[Hardware Error]:   section_type: PCIe error
[ 5014.119517] {3}[Hardware Error]:   port_type: 4, root port
[ 5014.119518] {3}[Hardware Error]:   version: 3.0
[ 5014.119519] {3}[Hardware Error]:   command: 0x0547, status: 0x0010
[ 5014.119520] {3}[Hardware Error]:   device_id: 0000:3a:00.0
[ 5014.119521] {3}[Hardware Error]:   slot: 2
[ 5014.119522] {3}[Hardware Error]:   secondary_bus: 0x3b
[ 5014.119523] {3}[Hardware Error]:   vendor_id: 0x8086, device_id: 0x2030
[ 5014.119524] {3}[Hardware Error]:   class_code: 060400
[ 5014.119525] {3}[Hardware Error]:   bridge: secondary_status: 0x0000, control: 0x0013
[ 5014.119551] pcieport 0000:3a:00.0: AER: aer_status: 0x00000001, aer_mask: 0x00002000
[ 5014.119553] pcieport 0000:3a:00.0: AER:    [ 0] RxErr                  (First)
[ 5014.119555] pcieport 0000:3a:00.0: AER: aer_layer=Physical Layer, aer_agent=Receiver ID
"""


def test_firmware_first_record_and_kernel_print_are_one_event() -> None:
    assert facts(GHES_CORRECTED_WITH_KERNEL_PRINT) == [
        event(
            None,
            "0000:3a:00.0",
            "8086:2030",
            "corrected",
            "Physical Layer",
            ["RxErr"],
            time="5014.119511",
        ),
    ]


# dmesg -x, 6.x "Multiple" report with detail blocks for the root port and the GPU.
DMESG_X_MULTIPLE = """
kern  :info  : [  512.100200] pcieport 0000:97:01.0: AER: Multiple Correctable error message received from 0000:98:00.0
kern  :warn  : [  512.100215] pcieport 0000:97:01.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)
kern  :warn  : [  512.100221] pcieport 0000:97:01.0:   device [8086:352a] error status/mask=00001100/00002000
kern  :warn  : [  512.100226] pcieport 0000:97:01.0:    [ 8] Rollover
kern  :warn  : [  512.100231] pcieport 0000:97:01.0:    [12] Timeout
kern  :warn  : [  512.100240] nvidia 0000:98:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)
kern  :warn  : [  512.100245] nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000041/0000e000
kern  :warn  : [  512.100250] nvidia 0000:98:00.0:    [ 0] RxErr
kern  :warn  : [  512.100255] nvidia 0000:98:00.0:    [ 6] BadTLP
"""


def test_dmesg_x_multiple_report_gives_one_event_per_device() -> None:
    assert facts(DMESG_X_MULTIPLE) == [
        event(
            "0000:97:01.0",
            "0000:97:01.0",
            "8086:352a",
            "corrected",
            "Data Link Layer",
            ["Rollover", "Timeout"],
            multiple=True,
            time="512.100200",
        ),
        event(
            "0000:97:01.0",
            "0000:98:00.0",
            "10de:2330",
            "corrected",
            "Physical Layer",
            ["RxErr", "BadTLP"],
            multiple=True,
            time="512.100200",
        ),
    ]


# 4.x fatal, id= form, long bit names, TLP header.
FATAL_4X_MALFORMED_TLP = """
pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: id=0018
pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, id=0018(Receiver ID)
pcieport 0000:00:03.0:   device [8086:6f08] error status/mask=00040000/00000000
pcieport 0000:00:03.0:    [18] Malformed TLP          (First)
pcieport 0000:00:03.0:   TLP Header: 4a000001 0100000f 03000000 00000000
pcieport 0000:00:03.0: broadcast error_detected message
"""


def test_4x_fatal_with_long_names_and_tlp_header() -> None:
    assert facts(FATAL_4X_MALFORMED_TLP) == [
        event(
            "0000:00:03.0", "0000:00:03.0", "8086:6f08", "fatal", "Transaction Layer", ["MalfTLP"]
        ),
    ]


# 3.x (aerdrv_errprint.c): one space before the bit index, "Error of this Agent" trailer.
AER_3X_MULTIPLE = """
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0: AER: Multiple Corrected error received: id=00e0
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=00e0(Receiver ID)
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0:   device [8086:1c10] error status/mask=00000041/00002000
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0:  [ 0] Receiver Error         (First)
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0:  [ 6] Bad TLP
Jan 11 09:20:14 node7 kernel: pcieport 0000:00:1c.0:   Error of this Agent(00e0) is reported first
"""


def test_3x_bit_lines_with_one_space() -> None:
    raw = AER_3X_MULTIPLE.strip().splitlines()
    expected = [
        event(
            "0000:00:1c.0",
            "0000:00:1c.0",
            "8086:1c10",
            "corrected",
            "Physical Layer",
            ["RxErr", "BadTLP"],
            multiple=True,
            time="Jan 11 09:20:14",
        ),
    ]
    assert facts(AER_3X_MULTIPLE) == expected
    kept = [line for line in raw if might_be_aer(line)]
    assert [e.to_fact() for e in parse_aer(iter_kernel_lines(kept))] == expected
    # without the status word the bit lines alone name the errors
    without_status = "\n".join(line for line in raw if "status/mask" not in line)
    assert facts(without_status)[0]["errors"] == ["RxErr", "BadTLP"]


# 5.x: the header's "can't find device of ID" note belongs to it (ID0018 is 00:03.0).
CANT_FIND_AFTER_HEADER = """
[16064.882605] pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0
[16064.884602] pcieport 0000:00:03.0: AER: can't find device of ID0018
[16064.884607] pcieport 0000:00:03.0: AER: Multiple Corrected error received: 0000:00:03.0
[16064.884617] pcieport 0000:00:03.0: AER: can't find device of ID0018
"""


def test_cant_find_note_is_part_of_its_header() -> None:
    assert facts(CANT_FIND_AFTER_HEADER) == [
        event("0000:00:03.0", "0000:00:03.0", None, "corrected", None, [], time="16064.882605"),
        event(
            "0000:00:03.0",
            "0000:00:03.0",
            None,
            "corrected",
            None,
            [],
            multiple=True,
            time="16064.884607",
        ),
    ]


def test_cant_find_note_without_its_header_stands_for_the_report() -> None:
    assert facts("pcieport 0000:00:1c.6: can't find device of ID00e6") == [
        event("0000:00:1c.6", None, None, "corrected", None, []),
    ]
    assert facts("pcieport 0000:00:1c.5: AER: found no error details for 0000:00:1c.5") == [
        event("0000:00:1c.5", "0000:00:1c.5", None, "corrected", None, []),
    ]


# 6.x behind Intel VMD: 5-digit PCI domain kept as printed.
VMD_DOMAIN = """
[  88.610022] pcieport 10000:e0:06.0: AER: Correctable error message received from 10000:e1:00.0
[  88.610047] nvme 10000:e1:00.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Receiver ID)
[  88.610051] nvme 10000:e1:00.0:   device [144d:a80a] error status/mask=00000080/0000e000
[  88.610055] nvme 10000:e1:00.0:    [ 7] BadDLLP
"""


def test_vmd_five_digit_domain() -> None:
    assert facts(VMD_DOMAIN) == [
        event(
            "10000:e0:06.0",
            "10000:e1:00.0",
            "144d:a80a",
            "corrected",
            "Data Link Layer",
            ["BadDLLP"],
            time="88.610022",
        ),
    ]


def test_status_word_alone_is_decoded() -> None:
    cut = "nvidia 0000:98:00.0:   device [10de:2330] error status/mask=00000041/0000e000"
    assert facts(cut) == [
        event(None, "0000:98:00.0", "10de:2330", "corrected", None, ["RxErr", "BadTLP"]),
    ]


def test_masked_bits_are_not_errors() -> None:
    text = """
pcieport 0000:00:1c.0: AER: Corrected error received: 0000:00:1c.0
pcieport 0000:00:1c.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
pcieport 0000:00:1c.0:   device [8086:a110] error status/mask=00002001/00002000
"""
    assert facts(text)[0]["errors"] == ["RxErr"]


def test_recovery_messages_alone_are_not_events() -> None:
    text = """
[   58.245739] ahci 0000:01:00.0: AER: can't recover (no error_detected callback)
[   58.252996] pcieport 0000:00:00.0: AER: device recovery failed
[   58.252999] pcieport 0000:00:00.0: AER: Root Port link has been reset (0)
[   58.253010] pcieport 0000:00:00.0: AER: device recovery successful
[    1.017331] pcieport 0000:00:1c.0: AER: enabled with IRQ 122
"""
    assert facts(text) == []


def test_two_root_ports_reporting_at_once_keep_their_own_blocks() -> None:
    text = """
pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0
pcieport 0000:80:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:81:00.0
nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)
nvidia 0000:81:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)
nvidia 0000:01:00.0:   device [10de:20b5] error status/mask=00000001/00000000
nvidia 0000:81:00.0:   device [10de:20b5] error status/mask=00100000/00000000
nvidia 0000:01:00.0:    [ 0] RxErr
nvidia 0000:81:00.0:    [20] UnsupReq               (First)
"""
    assert facts(text) == [
        event(
            "0000:00:01.0", "0000:01:00.0", "10de:20b5", "corrected", "Physical Layer", ["RxErr"]
        ),
        event(
            "0000:80:01.0",
            "0000:81:00.0",
            "10de:20b5",
            "nonfatal",
            "Transaction Layer",
            ["UnsupReq"],
        ),
    ]


def test_uncorrectable_block_without_severity_takes_it_from_the_same_device() -> None:
    text = """
pcieport 0000:00:00.0: device [14e4:2712] error status/mask=00044000/00400000
pcieport 0000:00:00.0: [14] CmpltTO
pcieport 0000:00:00.0: AER: Uncorrected (Fatal) error received: 0000:00:00.0
pcieport 0000:00:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)
"""
    assert [e["severity"] for e in facts(text)] == ["fatal", "fatal"]


@pytest.mark.parametrize(
    "text",
    [
        KMSG_CORRECTABLE_H100,
        NONFATAL_H200_INTERLEAVED,
        FATAL_H200_INACCESSIBLE,
        GHES_FATAL_H200,
        GHES_CORRECTED_WITH_KERNEL_PRINT,
        DMESG_X_MULTIPLE,
        FATAL_4X_MALFORMED_TLP,
        CANT_FIND_AFTER_HEADER,
        VMD_DOMAIN,
    ],
)
def test_prefilter_keeps_every_needed_line(text: str) -> None:
    raw = text.strip("\n").splitlines()
    kept = [line for line in raw if might_be_aer(line)]
    assert parse_aer(iter_kernel_lines(kept)) == parse_aer(iter_kernel_lines(raw))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("pcieport 0000:00:03.1:    [12] Timeout", True),
        ("[ 58.2] pcieport 0000:00:00.0: [14] CmpltTO", True),
        ("Sep 19 host kernel: [ 1.2] x 0000:00:00.0: [ 0] RxErr", True),
        ("pcieport 0000:00:00.0: [0] RxErr", True),
        ("pcieport 0000:00:1c.0:  [ 0] Receiver Error", True),
        ("{1}[Hardware Error]:   section_type: PCIe error", True),
        ("pcieport 0000:00:1c.6: can't find device of ID00e6", True),
        ("Sep 19 16:18:02 host kernel: [68183.615790] usb 1-4: new device", False),
        ("[  123.456789] [  T291] nvme nvme0: I/O 258 QID 4 timeout", False),
        ("kernel: [12345.678] eth0: link up", False),
    ],
)
def test_might_be_aer(line: str, expected: bool) -> None:
    assert might_be_aer(line) is expected


def test_event_is_frozen_and_fact_has_exactly_the_documented_keys() -> None:
    (only,) = parse_aer(iter_kernel_lines(KMSG_CORRECTABLE_H100.strip().splitlines()))
    assert isinstance(only, AerEvent)
    assert set(only.to_fact()) == {
        "reporter",
        "device",
        "vendor_device",
        "severity",
        "type",
        "errors",
        "multiple",
        "time",
    }
    with pytest.raises(AttributeError):
        only.severity = "fatal"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# Downstream Port Containment (drivers/pci/pcie/dpc.c of each era; the corpus holds the real
# logs of 4.x .. 6.15, these the wordings no public log in it shows)

# 6.16+ ("PCI/DPC: Log Error Source ID only when valid"): one line; a trigger of ERR_FATAL /
# ERR_NONFATAL names its source, an unmasked uncorrectable error does not.
DPC_616 = """
[ 100.000001] pcieport 0000:00:01.0: DPC: containment event, status:0x000d, ERR_FATAL received from 0000:02:00.0
[ 100.000101] pcieport 0000:00:01.0: AER: broadcast error_detected message
[ 200.000001] pcieport 0000:00:03.0: DPC: containment event, status:0x0003, ERR_NONFATAL received from 0000:05:00.0
[ 300.000001] pcieport 0000:00:07.0: DPC: containment event, status:0x0009: unmasked uncorrectable error detected
[ 300.000002] pcieport 0000:00:07.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Data Link Layer, (Receiver ID)
[ 300.000003] pcieport 0000:00:07.0:   device [8086:347a] error status/mask=00000020/00400000
[ 300.000004] pcieport 0000:00:07.0:    [ 5] SDES                   (First)
[ 400.000001] pcieport 0000:00:09.0: DPC: containment event, status:0x0049: RP PIO error detected
[ 400.000002] pcieport 0000:00:09.0: DPC: rp_pio_status: 0x00000001, rp_pio_mask: 0x00030303
"""


def test_dpc_one_line_reports_of_6_16() -> None:
    got = facts(DPC_616)
    assert got == [
        event("0000:00:01.0", "0000:02:00.0", None, "fatal", None, [], time="100.000001"),
        event("0000:00:03.0", "0000:05:00.0", None, "nonfatal", None, [], time="200.000001"),
        event(
            "0000:00:07.0",
            "0000:00:07.0",
            "8086:347a",
            "fatal",
            "Data Link Layer",
            ["SDES"],
            time="300.000001",
        ),
        event("0000:00:09.0", None, None, "nonfatal", None, [], time="400.000001"),
    ]
    assert all(e.containment for e in parse_aer(iter_kernel_lines(DPC_616.split("\n"))))


# 4.x: the port service device prints it, and the companion line ends "remove downstream
# devices"; a containment line whose companion was cut takes the trigger from its status word
# (bits 2:1, 2 = ERR_FATAL); a companion whose containment line was cut is still a report.
DPC_OLD_AND_CUT = """
[    9.000001] dpc 0000:00:1c.0:pcie010: DPC containment event, status:0x1f05 source:0x0200
[    9.000002] dpc 0000:00:1c.0:pcie010: DPC ERR_FATAL detected, remove downstream devices
[   10.000001] pcieport 0000:00:1d.0: DPC: containment event, status:0x1f05 source:0x0300
[   11.000001] pcieport 0000:00:1e.0: DPC: ERR_NONFATAL detected
[   12.000001] pcieport 0000:00:1f.0: DPC: containment event, status:0x1f01 source:0x0000
"""


def test_dpc_old_wording_cut_reports_and_the_status_word() -> None:
    assert facts(DPC_OLD_AND_CUT) == [
        event("0000:00:1c.0", None, None, "fatal", None, [], time="9.000001"),
        event("0000:00:1d.0", None, None, "fatal", None, [], time="10.000001"),
        event("0000:00:1e.0", None, None, "nonfatal", None, [], time="11.000001"),
        event("0000:00:1f.0", None, None, "nonfatal", None, [], time="12.000001"),
    ]


def test_dpc_and_edr_notes_that_are_no_report() -> None:
    text = """
pcieport 0000:00:1c.0: DPC: error containment capabilities: Int Msg #0, RPExt+ PoisonedTLP+ SwTrigger+ RP PIO Log 4, DL_ActiveErr+
pcieport 0000:00:1c.0: EDR: EDR event received
pcieport 0000:00:1c.0: EDR: Reported EDR dev: 0000:00:1c.0
pcieport 0000:00:1c.0: DPC: Data Link Layer Link Active not set in 1000 msec
pcieport 0000:00:1c.0: pciehp: Slot(4): Link Down
pcieport 0000:00:1c.0: AER: subordinate device reset failed
pcieport 0000:00:1c.0: EDR: DPC port successfully recovered
nvme 0000:34:00.0: ready 0ms after DPC
"""
    assert facts(text) == []
    assert all(might_be_aer(line) for line in text.split("\n") if "DPC" in line)


def test_corrected_aer_report_of_a_port_is_not_a_containment() -> None:
    got = parse_aer(iter_kernel_lines(KMSG_CORRECTABLE_H100.strip("\n").splitlines()))
    assert [e.containment for e in got] == [False]


# Firmware-first: records the firmware reports faster than the kernel's recovery work prints
# them; each print is the detail of the oldest record of its device not yet printed.
GHES_TWO_THEN_PRINTS = """
[   77.571315] {1}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1
[   77.571418] {1}[Hardware Error]: event severity: recoverable
[   77.571459] {1}[Hardware Error]:  Error 0, type: recoverable
[   77.571500] {1}[Hardware Error]:   section_type: PCIe error
[   77.571661] {1}[Hardware Error]:   device_id: 0000:c9:02.0
[   77.571773] {1}[Hardware Error]:   vendor_id: 0x8086, device_id: 0x347a
[   77.691273] {2}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 1
[   77.691738] {2}[Hardware Error]: event severity: recoverable
[   77.691971] {2}[Hardware Error]:  Error 0, type: recoverable
[   77.692192] {2}[Hardware Error]:   section_type: PCIe error
[   77.693032] {2}[Hardware Error]:   device_id: 0000:c9:02.0
[   77.693641] {2}[Hardware Error]:   vendor_id: 0x8086, device_id: 0x347a
[   77.719216] pcieport 0000:c9:02.0: AER: aer_status: 0x00200000, aer_mask: 0x00100020
[   77.719390] pcieport 0000:c9:02.0:    [21] ACSViol                (First)
[   77.719557] pcieport 0000:c9:02.0: AER: aer_layer=Transaction Layer, aer_agent=Receiver ID
[   77.719600] pcieport 0000:c9:02.0: AER: aer_status: 0x00004000, aer_mask: 0x00100020
[   77.719601] pcieport 0000:c9:02.0:    [14] CmpltTO                (First)
[   77.719602] pcieport 0000:c9:02.0: AER: aer_layer=Transaction Layer, aer_agent=Requester ID
"""


def test_firmware_first_prints_join_their_records_in_order() -> None:
    assert facts(GHES_TWO_THEN_PRINTS) == [
        event(
            None,
            "0000:c9:02.0",
            "8086:347a",
            "nonfatal",
            "Transaction Layer",
            ["ACSViol"],
            time="77.571315",
        ),
        event(
            None,
            "0000:c9:02.0",
            "8086:347a",
            "nonfatal",
            "Transaction Layer",
            ["CmpltTO"],
            time="77.691273",
        ),
    ]


def test_the_check_declares_the_parsers_anchors() -> None:
    # the one kernel-log pass finds the lines by the check's declaration (loaded without the
    # parser); the parser's own AER_ANCHORS / HEAD_LINES must say the same
    from sitscheck.checks.pcie_aer.check import PcieAerCheck
    from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES

    interest = PcieAerCheck.kernel_log
    assert interest is not None
    assert tuple(interest.anchors) == AER_ANCHORS
    assert interest.head_lines == HEAD_LINES
