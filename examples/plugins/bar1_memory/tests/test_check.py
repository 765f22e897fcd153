"""The bar1_memory check's declarations, and its judging of real BAR1 readings and of every
state a reading can be in (pure: no node, no bundle)."""

from __future__ import annotations

import msgspec
import pytest
from sitscheck.contract import Check, NvmlReadings, NvmlValue, Severity
from sitscheck.contract.declarations import nvml_read_problems

from bar1_corpus import MIB, fleet, gpu, nvml_value, readings
from sitscheck_bar1_memory.check import BAR1, Bar1MemoryCheck
from sitscheck_bar1_memory.codes import CODES, EXHAUSTED
from sitscheck_bar1_memory.facts import Bar1Facts
from sitscheck_bar1_memory.judge import TOTAL_METRIC, USED_METRIC, judge, shape

READINGS = {entry["sample"]: entry for entry in readings()}


def _bar1(total_mib: int, used_mib: int, free_mib: int) -> NvmlValue:
    value = {"bar1Total": total_mib * MIB, "bar1Free": free_mib * MIB, "bar1Used": used_mib * MIB}
    return NvmlValue(BAR1.key, BAR1.function, value)


def test_the_check_provides_the_contract_and_declares_one_nvml_call() -> None:
    check = Bar1MemoryCheck()
    assert isinstance(check, Check)
    assert check.evidence.nvml_reads == (BAR1,)
    assert (BAR1.key, BAR1.function, BAR1.args) == (
        "bar1_memory",
        "nvmlDeviceGetBAR1MemoryInfo",
        ("handle",),
    )
    assert nvml_read_problems(check) == []  # sitscheck's registry would refuse it else
    assert check.kernel_log is None and not check.evidence.commands


def test_its_code_is_a_warning_condition() -> None:
    spec = CODES.get(EXHAUSTED)
    assert spec is not None
    assert spec.severity is Severity.WARNING
    assert spec.kind.value == "condition"


@pytest.mark.parametrize("sample", sorted(READINGS))
def test_real_readings_give_their_numbers_and_no_finding(sample: str) -> None:
    entry = READINGS[sample]
    out = judge(fleet(nvml_value(entry)))
    assert out.error is None and out.findings == []
    (record,) = out.facts["gpus"]
    msgspec.convert(out.facts, Bar1Facts)
    if entry["total_mib"] is None:  # N/A: not supported, not judged, and no number made up
        assert record["state"] == "not_supported"
        assert not {"total_bytes", "used_bytes", "used_percent"} & set(record)
        assert out.not_judged == [
            "GPU 0: BAR1: not supported by this GPU or driver "
            f"({BAR1.function}(handle): Not Supported "
            "(NVML_ERROR_NOT_SUPPORTED))"
        ]
        assert out.metrics == []
        return
    assert record["state"] == "ok"
    assert (record["total_mib"], record["used_mib"]) == (entry["total_mib"], entry["used_mib"])
    assert record["free_bytes"] == entry["free_mib"] * MIB
    assert record["used_percent"] == round(100 * entry["used_mib"] / entry["total_mib"], 1)
    assert record["used_percent"] < 90  # none of these nodes was near full
    assert {(m.name, m.value) for m in out.metrics} == {
        (USED_METRIC, entry["used_mib"] * MIB),
        (TOTAL_METRIC, entry["total_mib"] * MIB),
    }
    assert all(
        m.labels == {"hw.id": gpu(0, nvml_value(entry)).uuid, "gpu.index": "0"} for m in out.metrics
    )


def test_the_h100_under_load_maps_fifteen_percent() -> None:
    (record,) = judge(fleet(nvml_value(READINGS["h100-590-load"]))).facts["gpus"]
    assert record["used_percent"] == 15.1


def test_a_full_aperture_is_its_finding() -> None:
    out = judge(fleet(_bar1(256, 5, 251), _bar1(256, 256, 0)))
    (finding,) = out.findings
    assert finding.code == EXHAUSTED
    assert finding.device is not None and finding.device.index == 1
    assert finding.message.startswith("GPU 1: BAR1 aperture full: 256 of 256 MiB mapped")
    assert finding.evidence[0].ref == BAR1.function
    assert out.facts["gpus"][1]["used_percent"] == 100.0


@pytest.mark.parametrize("state", ["error", "timeout"])
def test_a_read_that_failed_is_unknown_naming_it(state: str) -> None:
    detail = f"{BAR1.function}(handle): Unknown Error (NVML_ERROR_UNKNOWN)"
    failed = NvmlValue(BAR1.key, BAR1.function, None, state, detail)
    out = judge(fleet(_bar1(256, 5, 251), failed))
    assert out.error is not None and out.error.startswith("GPU 1: BAR1: ")
    assert detail in out.error
    assert out.facts["gpus"][1] == {**out.facts["gpus"][1], "state": state}
    assert "used_percent" not in out.facts["gpus"][1]


def test_a_reading_the_evidence_lacks_is_unknown_never_zero() -> None:
    missing = NvmlValue(
        BAR1.key, BAR1.function, None, "not_recorded", "nvml.json holds no bar1_memory"
    )
    out = judge(fleet(missing, ref="nvml.json"))
    assert out.error == "GPU 0: BAR1: not recorded in the evidence (nvml.json holds no bar1_memory)"
    assert out.metrics == [] and "used_bytes" not in out.facts["gpus"][0]


@pytest.mark.parametrize(
    "value",
    [
        "lots",
        {"bar1Total": 256 * MIB, "bar1Free": 0},
        {"bar1Total": 256 * MIB, "bar1Free": -1, "bar1Used": 1},
        {"bar1Total": 256 * MIB, "bar1Free": True, "bar1Used": 1},
        {"bar1Total": 256 * MIB, "bar1Free": 1.5, "bar1Used": 1},
        {"bar1Total": 1, "bar1Free": 0, "bar1Used": 2},
        [256, 0, 256],
    ],
)
def test_a_value_not_of_nvmls_shape_is_no_reading(value: object) -> None:
    assert shape(value) is None
    out = judge(fleet(NvmlValue(BAR1.key, BAR1.function, value), ref="nvml.json"))
    assert out.error == "GPU 0: BAR1: nvml.json holds no reading of its shape"
    assert out.findings == [] and out.metrics == []
    assert out.facts["gpus"][0]["state"] == "error"


def test_a_lost_gpu_is_not_judged() -> None:
    lost = gpu(0, _bar1(256, 256, 0), lost="gpu_lost")
    out = judge(NvmlReadings((lost,), "nvml"))
    assert out.findings == [] and out.error is None and out.metrics == []
    assert out.not_judged == ["GPU 0: BAR1 not judged: the GPU does not answer (gpu_lost)"]


def test_no_gpu_listed_is_unknown() -> None:
    assert judge(fleet()).error == "nvml: NVML lists no GPU"
