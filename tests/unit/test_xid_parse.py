"""sitscheck.checks.xid.parse and .catalog on lines written as the NVIDIA driver prints them
(kernel_rc.c / osHandleGpuLost / nvswitch wording), beyond the shared corpus."""

# Log samples are kept verbatim, as wide as the kernel printed them.
# ruff: noqa: E501

from __future__ import annotations

import pytest
from sitscheck.checks.xid.catalog import (
    XidInfo,
    assess_xid,
    lookup_sxid,
    lookup_xid,
    recovery_action_from_message,
    recovery_label_from_message,
)
from sitscheck.checks.xid.parse import XidEvent, might_be_xid, parse_xid
from sitscheck.kernlog.lines import iter_kernel_lines


def events(text: str) -> list[XidEvent]:
    return parse_xid(iter_kernel_lines(text.strip("\n").splitlines()))


def facts(text: str) -> list[dict[str, object]]:
    return [event.to_fact() for event in events(text)]


def core(text: str) -> list[tuple[object, ...]]:
    """(device, xid, sxid, pid, process) of each event."""
    return [(e.device, e.xid, e.sxid, e.pid, e.process) for e in events(text)]


# H100 HGX: Xid 79 and the driver's own fallen-off line for the same GPU, then the crash-dump
# note (a 3-line message) and a fatal SXid on an NVSwitch.
XID79_THEN_MESSAGE = """
[6781741.548768] NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b
[6781741.548776] NVRM: GPU Board Serial Number: 1653723052734
[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[6781741.548783] NVRM: GPU 0000:91:00.0: GPU has fallen off the bus.
[6781741.548786] NVRM: GPU 0000:91:00.0: GPU serial number is 1653723052734.
[6781741.548790] NVRM: A GPU crash dump has been created. If possible, please run
                 NVRM: nvidia-bug-report.sh as root to collect this data before
                 NVRM: the NVIDIA kernel module is unloaded.
[6781753.400584] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 38 LTSSM Fault Up
"""


def test_xid79_and_its_fallen_off_message_are_one_event() -> None:
    assert facts(XID79_THEN_MESSAGE) == [
        {
            "device": "0000:91:00.0",
            "xid": 79,
            "sxid": None,
            "pid": None,
            "process": None,
            "time": "6781741.548779",
            "message": "GPU has fallen off the bus.",
        },
        {
            "device": "0000:06:00.0",
            "xid": None,
            "sxid": 20034,
            "pid": None,
            "process": None,
            "time": "6781753.400584",
            "message": "Fatal, Link 38 LTSSM Fault Up",
        },
    ]
    first = events(XID79_THEN_MESSAGE)[0]
    assert "GPU 0000:91:00.0: GPU serial number is 1653723052734." in first.details


def test_message_before_its_xid79_is_still_one_event() -> None:
    text = """
Sep 09 15:53:19 saturn kernel: NVRM: GPU 0000:10:00.0: GPU has fallen off the bus.
Sep 09 15:53:19 saturn kernel: NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus.
"""
    assert facts(text) == [
        {
            "device": "0000:10:00.0",
            "xid": 79,
            "sxid": None,
            "pid": 0,
            "process": None,
            "time": "Sep 09 15:53:19",
            "message": "GPU has fallen off the bus.",
        },
    ]


def test_fallen_off_messages_of_different_gpus_or_repeated_are_separate() -> None:
    text = """
[ 1936.510001] NVRM: Xid (PCI:0000:3b:00): 79, pid=4021, name=python3, GPU has fallen off the bus.
[ 1936.510073] NVRM: GPU at 0000:5e:00.0 has fallen off the bus.
[ 1936.510087] NVRM: GPU at 0000:5e:00.0 has fallen off the bus.
[ 1936.510091] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
"""
    assert core(text) == [
        ("0000:3b:00.0", 79, None, 4021, "python3"),
        ("0000:5e:00.0", None, None, None, None),
        ("0000:5e:00.0", None, None, None, None),
    ]


def test_two_xid79_lines_are_two_events_even_with_one_message() -> None:
    text = """
NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.
NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
"""
    assert [e.xid for e in events(text)] == [79, 79]


def test_multiline_fallen_off_message_from_kmsg_record() -> None:
    raw = (
        "3,9041,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0a"
        "NVRM: (PCI ID: 10de:26b5) installed in this system has\\x0a"
        "NVRM: fallen off the bus and is not responding to commands.\\x0a"
    )
    (only,) = parse_xid(iter_kernel_lines([raw]))
    assert (only.device, only.xid, only.time) == ("0000:b3:00.0", None, "1843.308145")
    assert only.message == (
        "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
        "fallen off the bus and is not responding to commands."
    )


# tests/corpus/shared/xid/011-fallen-off-bus-multiline-no-xid-570-open.txt, with one line of
# another NVRM print (tests/corpus/shared/xid/028-...: a check that failed) printed inside it.
FALLEN_WITH_A_STRAY_LINE = """
[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
[ 1843.308150] NVRM: nvCheckFailedNoLog: Check failed: (status == NV_OK) || (status == NV_ERR_GPU_IN_FULLCHIP_RESET) @ gpu_user_shared_data.c:503
               NVRM: (PCI ID: 10de:26b5) installed in this system has
               NVRM: fallen off the bus and is not responding to commands.
[ 1843.439662] NVRM: The NVIDIA probe routine failed for 1 device(s).
"""


def test_one_stray_nvrm_line_inside_the_three_line_fallen_off_message_is_allowed() -> None:
    """The message is read across one line of another print (`_FALL_LINES`): its GPU is the
    one the first line names, not an unnamed device."""
    (only,) = events(FALLEN_WITH_A_STRAY_LINE)
    assert (only.device, only.xid, only.time) == ("0000:b3:00.0", None, "1843.308145")
    assert only.message.startswith("The NVIDIA GPU 0000:b3:00.0 ")
    assert only.message.endswith("fallen off the bus and is not responding to commands.")


def test_the_nvidia_gpu_message_that_is_not_about_the_bus_is_no_event() -> None:
    text = """
NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80)
NVRM: installed in this system is not supported by the
NVRM: NVIDIA 550.54.14 driver release.
"""
    assert facts(text) == []


# A100, ECC: DBE, the row remap it caused, and the containment result.
A100_DBE_SEQUENCE = """
[Tue Mar  5 02:14:07 2024] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fdf0de80 partition 5, subpartition 1.
[Tue Mar  5 02:14:07 2024] NVRM: Xid (PCI:0000:07:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row (0x00000007fdf0de80) is marked for remapping, reset gpu to activate.
[Tue Mar  5 02:14:07 2024] NVRM: Xid (PCI:0000:07:00): 94, pid=2144821, name=python3, Contained: SM (0x1). RST: No, D-RST: No
"""


def test_dbe_row_remap_and_contained_error() -> None:
    assert core(A100_DBE_SEQUENCE) == [
        ("0000:07:00.0", 48, None, None, None),
        ("0000:07:00.0", 63, None, None, None),
        ("0000:07:00.0", 94, None, 2144821, "python3"),
    ]
    assert events(A100_DBE_SEQUENCE)[2].message == "Contained: SM (0x1). RST: No, D-RST: No"
    assert events(A100_DBE_SEQUENCE)[0].time == "Tue Mar  5 02:14:07 2024"


def test_row_remap_failure_and_uncontained_error_with_pid_only() -> None:
    text = """
kernel: NVRM: Xid (PCI:0000:0f:00): 64, pid=57530, Row Remapper Error: (0x00000005d28c03a0) - All reserved rows for bank are remapped
kernel: NVRM: Xid (PCI:0000:0f:00): 95, pid=7062, Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No
"""
    assert facts(text) == [
        {
            "device": "0000:0f:00.0",
            "xid": 64,
            "sxid": None,
            "pid": 57530,
            "process": None,
            "time": None,
            "message": "Row Remapper Error: (0x00000005d28c03a0) - All reserved rows for bank "
            "are remapped",
        },
        {
            "device": "0000:0f:00.0",
            "xid": 95,
            "sxid": None,
            "pid": 7062,
            "process": None,
            "time": None,
            "message": "Uncontained: LTC TAG (0x2,0x1). RST: Yes, D-RST: No",
        },
    ]


def test_mig_attributed_xids() -> None:
    text = """
NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No
NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:02): 13, pid=9120, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address
"""
    got = events(text)
    assert [(e.device, e.xid, e.pid, e.gpu_instance, e.compute_instance) for e in got] == [
        ("0000:01:00.0", 94, 7194, 5, None),
        ("0000:3b:00.0", 13, 9120, 1, 2),
    ]
    assert got[1].process == "python3"


@pytest.mark.parametrize(
    ("line", "device"),
    [
        (
            "NVRM: Xid (0003:00): 13, 0001 00000000 0000a097 00001b0c 1000f010 00000000",
            "0000:03:00.0",
        ),
        (
            "NVRM: Xid (0000:03:00): 13, 0001 00000000 0000a097 00001b0c 1000f010 00000000",
            "0000:03:00.0",
        ),
        (
            "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x0)",
            "0019:01:00.0",
        ),
    ],
)
def test_old_and_domain_addresses(line: str, device: str) -> None:
    assert [e.device for e in events(line)] == [device]


def test_nvlink_xid74_with_unknown_pid_forms() -> None:
    text = """
Aug 05 03:12:01 gpu-node-17 kernel: NVRM: Xid (PCI:0000:b9:00): 74, pid='<unknown>', name=<unknown>, NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)
Aug 05 03:12:01 gpu-node-17 kernel: NVRM: Xid (PCI:0000:65:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error detected on link 2
"""
    assert core(text) == [
        ("0000:b9:00.0", 74, None, None, None),
        ("0000:65:00.0", 74, None, None, None),
    ]
    assert events(text)[0].message.startswith("NVLink: fatal error detected on link 6(")


def test_nvswitch_sxid_report_with_its_detail_lines_is_one_event() -> None:
    text = """
[ 4117.001122] nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Non-fatal, Link 29 AN1 Heartbeat Timeout Error (First)
[ 4117.001130] nvidia-nvswitch4: SXid (PCI:0000:c6:00.0): 19084, Severity 1 Engine instance 29 Sub-engine instance 00
[ 4117.002301] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 12028, Non-fatal, Link 04 egress non-posted PRIV error (First)
"""
    assert core(text) == [
        ("0000:c6:00.0", None, 19084, None, None),
        ("0000:c2:00.0", None, 12028, None, None),
    ]
    first = events(text)[0]
    assert first.message.startswith("Non-fatal, Link 29")
    assert first.details == ("Severity 1 Engine instance 29 Sub-engine instance 00",)


def test_interleaved_switch_details_join_their_own_report() -> None:
    text = """
[ 10.1] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 12028, Fatal, Link 48 LTSSM Fault Up
[ 10.2] nvidia-nvswitch1: SXid (PCI:0000:c3:00.0): 12028, Fatal, Link 12 LTSSM Fault Up
[ 10.3] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 12028, Severity 5 Engine instance 48 Sub-engine instance 00
[ 10.4] nvidia-nvswitch1: SXid (PCI:0000:c3:00.0): 12028, Severity 5 Engine instance 12 Sub-engine instance 00
[ 10.5] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 12028, Data {0x00000030, 0x00000000}
[ 10.6] nvidia-nvswitch1: SXid (PCI:0000:c3:00.0): 12028, Data {0x0000000c, 0x00000000}
"""
    found = events(text)
    assert [(e.device, e.sxid) for e in found] == [("0000:c2:00.0", 12028), ("0000:c3:00.0", 12028)]
    assert [len(e.details) for e in found] == [2, 2]
    assert "instance 48" in found[0].details[0] and "0x00000030" in found[0].details[1]
    assert "instance 12" in found[1].details[0]


def test_sxid_detail_without_its_report_is_one_event_and_later_details_join_it() -> None:
    text = """
[ 38.175] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 43 Sub-engine instance 00
[ 38.176] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b}
[ 38.178] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt
[ 38.179] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22014, Data {0x0}
"""
    found = events(text)
    assert [(e.sxid, e.message.split(",")[0]) for e in found] == [
        (22013, "Severity 0 Engine instance 43 Sub-engine instance 00"),
        (22013, "Non-fatal"),
        (22014, "Data {0x0}"),
    ]
    assert found[0].details == ("Data {0x0000002b, 0x0000002b}",)


def test_fallen_off_message_without_a_pci_domain_still_names_the_gpu() -> None:
    text = "[ 99.0] NVRM: GPU 18:00.0: GPU has fallen off the bus.\n"
    assert core(text) == [("0000:18:00.0", None, None, None, None)]


def test_kmsg_xid_keeps_seq_time_and_process_in_parentheses() -> None:
    raw = [
        "3,88231,30709123456,-;NVRM: Xid (PCI:0000:2d:00): 109, pid=619, name=(udev-worker), "
        "channel 0x00000001, errorString CTX SWITCH TIMEOUT, Info 0x4000\n",
    ]
    (only,) = parse_xid(iter_kernel_lines(raw))
    assert only.to_fact() == {
        "device": "0000:2d:00.0",
        "xid": 109,
        "sxid": None,
        "pid": 619,
        "process": "(udev-worker)",
        "time": "30709.123456",
        "message": "channel 0x00000001, errorString CTX SWITCH TIMEOUT, Info 0x4000",
    }


def test_gsp_dump_lines_belong_to_the_xid_above_and_caused_by_adds_nothing() -> None:
    text = """
Mai 17 13:10:25 ANDROMEDA kernel: NVRM: Xid (PCI:0000:01:00): 120, pid='<unknown>', name=<unknown>, GSP task panic: unknown error (0) @ pc:0x1001adc, aux:0x0, partition:2#0, task:1
Mai 17 13:10:25 ANDROMEDA kernel: NVRM:     Reported by libos partition:2#4 kernel v3.1 [0] @ ts:1747473020
Mai 17 13:10:25 ANDROMEDA kernel: NVRM:     RISC-V CSR State:
Mai 17 13:10:26 ANDROMEDA kernel: NVRM: Xid (PCI:0000:01:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 120
"""
    got = events(text)
    assert [(e.xid, len(e.details)) for e in got] == [(120, 2), (45, 0)]
    assert got[0].details[1] == "RISC-V CSR State:"


def test_xid_line_cut_after_the_number() -> None:
    assert facts("[ 12.5] NVRM: Xid (PCI:0000:01:00): 79") == [
        {
            "device": "0000:01:00.0",
            "xid": 79,
            "sxid": None,
            "pid": None,
            "process": None,
            "time": "12.5",
            "message": "",
        },
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[ 1.0] NVRM: Xid (PCI:0000:01:00): 13, x", True),
        ("[ 1.0] nvidia-nvswitch0: SXid (PCI:0000:c2:00.0): 20034, Fatal", True),
        ("               NVRM: (PCI ID: 10de:26b5) installed in this system has", True),
        ("[ 1.0] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0", False),
        ("Sep 19 16:18:02 host kernel: usb 1-4: new high-speed USB device", False),
    ],
)
def test_might_be_xid(line: str, expected: bool) -> None:
    assert might_be_xid(line) is expected


# ---------------------------------------------------------------------------------------------
# catalog


def test_catalog_covers_the_xids_that_matter_on_datacenter_gpus() -> None:
    important = [
        8,
        13,
        31,
        32,
        43,
        45,
        48,
        62,
        63,
        64,
        68,
        69,
        74,
        79,
        92,
        94,
        95,
        109,
        110,
        119,
        120,
        121,
        136,
        137,
        140,
        143,
        144,
        145,
        146,
        147,
        148,
        149,
        150,
        151,
        154,
        155,
        156,
        157,
        158,
        159,
        167,
        169,
    ]
    assert len(set(important)) >= 40
    for code in important:
        info = lookup_xid(code)
        assert info.known and info.code == code and info.kind == "xid", code
        assert info.severity in ("info", "warning", "critical")
        assert info.meaning


@pytest.mark.parametrize(
    ("code", "severity", "action", "sympathetic"),
    [
        (79, "critical", "reboot_node", False),
        (48, "critical", "reset_gpu", False),
        (95, "critical", "reset_gpu", True),
        (94, "warning", "restart_app", True),
        (74, "critical", "check_nvlink_fabric", True),
        (45, "info", "none", True),
        (13, "warning", "restart_app", False),
        (31, "warning", "restart_app", False),
        (63, "warning", "reset_gpu", False),
        (64, "critical", "reset_gpu", False),
        (119, "critical", "reset_gpu", False),
        (120, "critical", "reset_gpu", False),
        (62, "critical", "reset_gpu", False),
        (92, "warning", "none", False),
    ],
)
def test_xid_entries(code: int, severity: str, action: str, sympathetic: bool) -> None:
    info = lookup_xid(code)
    assert (info.severity, info.action, info.sympathetic) == (severity, action, sympathetic)


def test_unknown_codes_get_a_safe_default() -> None:
    assert lookup_xid(9999) == XidInfo(
        9999, "xid", "UNKNOWN", "Xid 9999 is not in this catalog", "warning", "inspect", known=False
    )
    unknown = lookup_sxid(99999)
    assert (unknown.severity, unknown.action, unknown.known) == ("warning", "inspect", False)


@pytest.mark.parametrize(
    ("code", "severity", "action"),
    [
        (22013, "info", "none"),
        (11012, "info", "none"),
        (20034, "critical", "check_nvlink_fabric"),
        (19084, "critical", "reset_gpu"),
        (12028, "warning", "restart_app"),
        (22003, "critical", "reboot_node"),
        (12022, "critical", "reset_gpu"),
    ],
)
def test_sxid_entries(code: int, severity: str, action: str) -> None:
    info = lookup_sxid(code)
    assert (info.kind, info.known, info.severity, info.action) == ("sxid", True, severity, action)


@pytest.mark.parametrize(
    ("message", "label", "action"),
    [
        (
            "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
            "GPU Reset Required",
            "reset_gpu",
        ),
        (
            "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
            "Node Reboot Required",
            "reboot_node",
        ),
        (
            "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)",
            "Drain P2P",
            "drain_p2p",
        ),
        (
            "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
            "Drain and Reset",
            "drain_and_reset",
        ),
        ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", "None", "none"),
        ("GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)", "PF FLR", "reset_gpu"),
        ("recovery action: Node Reboot Required", "Node Reboot Required", "reboot_node"),
        (
            "GPU recovery action changed from 0x0 (None) to 0x9 (Something New)",
            "Something New",
            None,
        ),
        ("Ch 00000001", None, None),
    ],
)
def test_xid154_recovery_action(message: str, label: str | None, action: str | None) -> None:
    assert recovery_label_from_message(message) == label
    assert recovery_action_from_message(message) == action


def test_assess_refines_by_message() -> None:
    reboot = assess_xid(
        154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    )
    assert (reboot.severity, reboot.action) == ("critical", "reboot_node")
    assert assess_xid(154, "changed from 0x1 (GPU Reset Required) to 0x0 (None)").severity == "info"
    # draining peer-to-peer traffic keeps the GPU in service: a warning, not critical
    drain = assess_xid(154, "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)")
    assert (drain.severity, drain.action) == ("warning", "drain_p2p")
    assert (
        assess_xid(149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6)").severity == "critical"
    )
    assert assess_xid(144, "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001)").severity == "warning"
    assert assess_xid(79) == lookup_xid(79)
