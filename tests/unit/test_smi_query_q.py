"""`nvidia-smi -q` (sitscheck.smi.query_q)."""

from __future__ import annotations

import pytest
from sitscheck.smi.query_q import parse_query_q
from sitscheck.smi.values import SmiErrorKind, SmiParseError, ValueKind

# An older (410-era) layout, two GPU sections around a GPU nvidia-smi could not open, the second
# GPU failing its reads.
OLD_LAYOUT = """
==============NVSMI LOG==============

Timestamp                           : Sat Dec  1 23:45:21 2018
Driver Version                      : 410.72
CUDA Version                        : 10.0

Attached GPUs                       : 3
GPU 00000000:3B:00.0
    Product Name                    : Tesla V100-SXM2-16GB
    Persistence Mode                : Disabled
    PCI
        GPU Link Info
            PCIe Generation
                Max                 : 3
                Current             : 3
            Link Width
                Max                 : 16x
                Current             : 8x
        Replays since reset         : 12
    Clocks Throttle Reasons
        Idle                        : Not Active
        HW Slowdown                 : Active
            HW Thermal Slowdown     : Active
    Ecc Mode
        Current                     : Enabled
        Pending                     : Enabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory       : 3
                Register File       : 0
                Total               : 5
            Double Bit
                Device Memory       : 1
                Total               : 1
        Aggregate
            Single Bit
                Device Memory       : 7
                Total               : 9
            Double Bit
                Device Memory       : 2
                Total               : 2
    Retired Pages
        Single Bit ECC              : 1
        Double Bit ECC              : 2
        Pending                     : Yes
    Temperature
        GPU Current Temp            : 88 C
        GPU Shutdown Temp           : 90 C
        GPU Slowdown Temp           : 87 C
    Power Readings
        Power Management            : Supported
        Power Draw                  : 299.50 W
        Power Limit                 : 300.00 W
        Enforced Power Limit        : 250.00 W
    Processes
        Process ID                  : 4242
            Type                    : C
            Name                    : python
            Used GPU Memory         : 1000 MiB
Unable to determine the device handle for GPU 0000:5E:00.0: Unknown Error
GPU 00000000:86:00.0
    Product Name                    : Tesla V100-SXM2-16GB
    Temperature
        GPU Current Temp            : Unknown Error
    Power Readings
        Power Draw                  : [GPU is lost]
    Clocks Throttle Reasons         : N/A
    Remapped Rows                   : N/A
    Processes                       : None
"""


def test_document_and_sections() -> None:
    query = parse_query_q(OLD_LAYOUT)
    assert (query.driver_version, query.cuda_version, query.attached_gpus) == ("410.72", "10.0", 3)
    assert query.timestamp == "Sat Dec  1 23:45:21 2018"
    assert [g.bus_id for g in query.gpus] == ["00000000:3B:00.0", "00000000:86:00.0"]
    assert [g.line for g in query.gpus] == [9, 63]
    (error,) = query.errors
    assert (error.kind, error.bus_id, error.reason) == (
        SmiErrorKind.DEVICE_HANDLE,
        "0000:5E:00.0",
        "Unknown Error",
    )


def test_old_layout_readings() -> None:
    gpu = parse_query_q(OLD_LAYOUT).gpus[0]
    assert gpu.persistence_mode.as_bool() is False
    assert (gpu.pcie.width_current.as_int(), gpu.pcie.width_max.as_int()) == (8, 16)
    assert gpu.pcie.replays_since_reset.as_int() == 12  # "Replays since reset": any case
    assert gpu.pcie.gen_device_current.kind is ValueKind.ABSENT
    assert gpu.clocks_event_reasons == {
        "Idle": gpu.clocks_event_reasons["Idle"],
        "HW Slowdown": gpu.clocks_event_reasons["HW Slowdown"],
        "HW Thermal Slowdown": gpu.clocks_event_reasons["HW Thermal Slowdown"],
    }
    assert gpu.clocks_event_reasons["HW Thermal Slowdown"].as_bool() is True
    assert gpu.get("Clocks Event Reasons/HW Thermal Slowdown").as_bool() is True
    assert gpu.get("Clocks Throttle Reasons/HW Slowdown/HW Thermal Slowdown").as_bool() is True
    assert gpu.ecc.mode_current.as_bool() is True
    volatile, aggregate = gpu.ecc.volatile, gpu.ecc.aggregate
    assert (volatile.correctable_total.as_int(), volatile.uncorrectable_total.as_int()) == (5, 1)
    assert (volatile.dram_correctable.as_int(), volatile.dram_uncorrectable.as_int()) == (3, 1)
    assert volatile.sram_correctable.kind is ValueKind.ABSENT
    assert (aggregate.correctable_total.as_int(), aggregate.uncorrectable_total.as_int()) == (9, 2)
    assert (gpu.ecc.retired_single_bit.as_int(), gpu.ecc.retired_double_bit.as_int()) == (1, 2)
    assert gpu.ecc.retired_pending.as_bool() is True
    t = gpu.temperature
    assert (t.gpu_current.as_int(), t.gpu_shutdown.as_int(), t.gpu_slowdown.as_int()) == (
        88,
        90,
        87,
    )
    p = gpu.power
    assert p.management.as_bool() is True
    assert p.draw.as_float() == 299.5
    assert p.requested_limit.as_float() == 300.0
    assert p.enforced_limit.as_float() == 250.0
    assert p.draw_average.kind is ValueKind.ABSENT
    (process,) = gpu.processes
    assert (process.pid.as_int(), process.name.as_text(), process.used_memory.as_int()) == (
        4242,
        "python",
        1000,
    )
    assert process.gpu_instance_id.kind is ValueKind.ABSENT


def test_failing_gpu_reads_are_faults_and_bare_sections_answer_for_their_fields() -> None:
    gpu = parse_query_q(OLD_LAYOUT).gpus[1]
    assert gpu.temperature.gpu_current.kind is ValueKind.ERROR
    assert gpu.power.draw.kind is ValueKind.LOST
    assert gpu.power.draw.as_float() is None
    assert gpu.remapped_rows.uncorrectable.kind is ValueKind.NOT_SUPPORTED
    assert gpu.get("Clocks Event Reasons/SW Power Cap").kind is ValueKind.NOT_SUPPORTED
    assert gpu.clocks_event_reasons == {}
    assert gpu.processes == ()
    assert gpu.get("Nothing/Like/This").kind is ValueKind.ABSENT


def test_tree_access_and_to_dict() -> None:
    gpu = parse_query_q(OLD_LAYOUT).gpus[0]
    assert gpu.tree["PCI"]["GPU Link Info"]["Link Width"]["Max"].value == "16x"
    assert "ECC Mode" in gpu.tree  # printed "Ecc Mode"
    assert "Clocks Event Reasons" in gpu.tree  # printed "Clocks Throttle Reasons"
    with pytest.raises(KeyError):
        gpu.tree["Fabric"]
    link = gpu.node("PCI/GPU Link Info/Link Width/Current")
    assert link is not None and link.line == 19
    tree = gpu.tree.to_dict()
    assert tree["Product Name"] == "Tesla V100-SXM2-16GB"
    assert tree["PCI"] == {
        "GPU Link Info": {
            "PCIe Generation": {"Max": "3", "Current": "3"},
            "Link Width": {"Max": "16x", "Current": "8x"},
        },
        "Replays since reset": "12",
    }
    assert tree["Clocks Throttle Reasons"] == {
        "Idle": "Not Active",
        "HW Slowdown": {"": "Active", "HW Thermal Slowdown": "Active"},
    }


def test_repeated_labels_become_lists() -> None:
    text = (
        "GPU 00000000:00:09.0\n"
        "    Processes\n"
        "        GPU instance ID                   : 1\n"
        "        Compute instance ID               : 0\n"
        "        Process ID                        : 11\n"
        "            Name                          : a\n"
        "        GPU instance ID                   : 2\n"
        "        Compute instance ID               : 0\n"
        "        Process ID                        : 12\n"
        "            Name                          : b\n"
    )
    gpu = parse_query_q(text).gpus[0]
    assert [(p.gpu_instance_id.as_int(), p.pid.as_int()) for p in gpu.processes] == [
        (1, 11),
        (2, 12),
    ]
    processes = gpu.tree.to_dict()["Processes"]
    assert isinstance(processes, dict)
    assert processes["GPU instance ID"] == ["1", "2"]
    assert processes["Process ID"] == [{"": "11", "Name": "a"}, {"": "12", "Name": "b"}]
    assert len(gpu.tree["Processes"].children_named("Process ID")) == 2


def test_split_sram_uncorrectable_and_missing_parts() -> None:
    text = (
        "GPU 00000000:00:09.0\n"
        "    ECC Errors\n"
        "        Volatile\n"
        "            SRAM Correctable              : 0\n"
        "            SRAM Uncorrectable Parity     : N/A\n"
        "            SRAM Uncorrectable SEC-DED    : 2\n"
        "            DRAM Correctable              : 5\n"
        "            DRAM Uncorrectable            : 1\n"
        "        Aggregate\n"
        "            SRAM Correctable              : N/A\n"
        "            SRAM Uncorrectable            : N/A\n"
        "            DRAM Correctable              : N/A\n"
        "            DRAM Uncorrectable            : GPU is lost\n"
    )
    ecc = parse_query_q(text).gpus[0].ecc
    assert ecc.volatile.sram_uncorrectable.as_int() == 2
    assert ecc.volatile.uncorrectable_total.as_int() == 3
    assert ecc.volatile.correctable_total.as_int() == 5
    assert ecc.aggregate.correctable_total.kind is ValueKind.NOT_SUPPORTED
    assert ecc.aggregate.uncorrectable_total.kind is ValueKind.LOST


def test_new_layout_power_and_tlimit_temperatures() -> None:
    text = (
        "GPU 00000000:00:09.0\n"
        "    Temperature\n"
        "        GPU Current Temp                               : 59 C\n"
        "        GPU T.Limit Temp                               : 26 C\n"
        "        GPU Shutdown T.Limit Temp                      : -8 C\n"
        "        Memory Current Temp                            : N/A\n"
        "    GPU Power Readings\n"
        "        Average Power Draw                             : 629.45 W\n"
        "        Instantaneous Power Draw                       : N/A\n"
        "        Current Power Limit                            : 650.00 W\n"
        "        Requested Power Limit                          : 700.00 W\n"
    )
    gpu = parse_query_q(text).gpus[0]
    assert gpu.power.draw.as_float() == 629.45
    assert gpu.power.draw_instant.kind is ValueKind.NOT_AVAILABLE
    assert gpu.power.enforced_limit.as_float() == 650.0
    assert gpu.power.requested_limit.as_float() == 700.0
    assert gpu.get("Power Readings/Average Power Draw").as_float() == 629.45  # alias
    t = gpu.temperature
    assert t.gpu_current.as_int() == 59
    assert t.gpu_shutdown_tlimit.as_int() == -8
    assert t.gpu_shutdown.kind is ValueKind.ABSENT
    assert t.memory_current.kind is ValueKind.NOT_SUPPORTED


def test_very_old_temperature_label() -> None:
    text = "GPU 0000:01:00.0\n    Temperature\n        Gpu                         : 29 C\n"
    gpu = parse_query_q(text).gpus[0]
    assert gpu.bus_id == "0000:01:00.0"
    assert gpu.temperature.gpu_current.as_int() == 29


def _reindent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else line for line in text.splitlines())


def test_indented_tabbed_and_crlf_pastes_read_the_same() -> None:
    plain = parse_query_q(OLD_LAYOUT)
    indented = parse_query_q(_reindent(OLD_LAYOUT, "   "))
    tabbed = parse_query_q(OLD_LAYOUT.replace("    ", "\t"))
    crlf = parse_query_q(OLD_LAYOUT.replace("\n", "\r\n"))
    for other in (indented, tabbed, crlf):
        assert [g.tree.to_dict() for g in other.gpus] == [g.tree.to_dict() for g in plain.gpus]
        assert other.gpus[0].power == plain.gpus[0].power


def test_lost_indentation_is_refused() -> None:
    collapsed = "\n".join(line.strip() for line in OLD_LAYOUT.splitlines())
    with pytest.raises(SmiParseError) as caught:
        parse_query_q(collapsed)
    assert caught.value.line == 10
    assert "indentation" in caught.value.message


def test_too_deep_nesting_is_refused() -> None:
    text = "GPU 00000000:00:09.0\n" + "".join(f"{' ' * (i + 1)}L{i}\n" for i in range(40))
    with pytest.raises(SmiParseError):
        parse_query_q(text)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", None),
        ("GPU 0: NVIDIA H200 (UUID: GPU-1)\n", None),
        ("power.draw [W], utilization.gpu [%]\n67.97 W, 0 %\n", 1),
        ("# gpu   pwr\n# Idx     W\n    0    69\n", 1),
        ("+---------------+\n| NVIDIA-SMI 550 |\n", 1),
        ("GPU 00000000:00:09.0\n    Product Name : A\n```\n", 3),
    ],
)
def test_refused(text: str, line: int | None) -> None:
    with pytest.raises(SmiParseError) as caught:
        parse_query_q(text)
    assert caught.value.line == line


def test_error_only_output() -> None:
    query = parse_query_q("No devices were found\n")
    assert query.gpus == ()
    assert [e.kind for e in query.errors] == [SmiErrorKind.NO_DEVICES]
