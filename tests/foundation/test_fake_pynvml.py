"""The replaying fake NVML keeps NVML's shapes and codes, so tests built on it mean something."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fakes.fake_pynvml import ERROR_CODES, FakeHandle, FakePynvml, NVMLError, nvml_bus_id


def test_error_codes_match_the_real_binding() -> None:
    pynvml = pytest.importorskip("pynvml")
    for name, code in ERROR_CODES.items():
        assert getattr(pynvml, name) == code, name
        assert getattr(FakePynvml, name) == code, name


def test_signatures_the_snapshot_uses_exist_in_the_real_binding() -> None:
    pynvml = pytest.importorskip("pynvml")
    served = [n for n in dir(FakePynvml) if n.startswith("nvml")]
    assert len(served) > 40
    missing = [name for name in served if not hasattr(pynvml, name)]
    assert missing == []


def test_calls_need_init(fake_nvml: FakePynvml) -> None:
    with pytest.raises(NVMLError) as caught:
        fake_nvml.nvmlDeviceGetCount()
    assert caught.value.value == ERROR_CODES["NVML_ERROR_UNINITIALIZED"]
    fake_nvml.nvmlInit()
    assert fake_nvml.nvmlDeviceGetCount() == 2


def test_serves_nvml_shapes(fake_nvml: FakePynvml, recording: dict[str, Any]) -> None:
    fake_nvml.nvmlInit()
    handle = fake_nvml.nvmlDeviceGetHandleByIndex(1)
    recorded = recording["gpus"][1]
    assert fake_nvml.nvmlDeviceGetUUID(handle) == recorded["uuid"]
    pci = fake_nvml.nvmlDeviceGetPciInfo(handle)
    assert pci.busId == "00000000:00:07.0"
    assert pci.pciDeviceId == 0x233510DE
    assert fake_nvml.nvmlDeviceGetEnforcedPowerLimit(handle) == 700_000  # milliwatts
    first = fake_nvml.nvmlDeviceGetUtilizationRates(handle)
    assert (first.gpu, first.memory) == (recorded["samples"][0]["util_gpu"], 0)
    assert fake_nvml.nvmlDeviceGetPowerUsage(handle) == round(
        recorded["samples"][0]["power_w"] * 1000
    )
    assert fake_nvml.nvmlDeviceGetPowerUsage(handle) == round(
        recorded["samples"][1]["power_w"] * 1000
    )
    start = recorded["violations_ns_start"]["low_utilization"]
    end = recorded["violations_ns_end"]["low_utilization"]
    assert fake_nvml.nvmlDeviceGetViolationStatus(handle, 4).violationTime == start
    assert fake_nvml.nvmlDeviceGetViolationStatus(handle, 4).violationTime == end
    with pytest.raises(NVMLError) as caught:  # recorded as not supported
        fake_nvml.nvmlDeviceGetRetiredPagesPendingStatus(handle)
    assert caught.value.value == ERROR_CODES["NVML_ERROR_NOT_SUPPORTED"]
    with pytest.raises(NVMLError):
        fake_nvml.nvmlDeviceGetNvLinkState(handle, len(recorded["nvlink"]))


def test_bus_id_in_nvml_form() -> None:
    assert nvml_bus_id("0000:19:00.0") == "00000000:19:00.0"
    assert nvml_bus_id("0000:af:00.0") == "00000000:AF:00.0"


def test_lose_gpu_from_call_n(fake_nvml: FakePynvml) -> None:
    fake_nvml.nvmlInit()
    fake_nvml.lose_gpu(0, from_call=2)
    handle = fake_nvml.nvmlDeviceGetHandleByIndex(0)  # call 0
    fake_nvml.nvmlDeviceGetName(handle)  # call 1
    with pytest.raises(NVMLError) as caught:
        fake_nvml.nvmlDeviceGetName(handle)  # call 2
    assert caught.value.value == ERROR_CODES["NVML_ERROR_GPU_IS_LOST"]
    other = fake_nvml.nvmlDeviceGetHandleByIndex(1)
    assert fake_nvml.nvmlDeviceGetName(other) == "NVIDIA H200"


def test_fail_init(fake_nvml: FakePynvml) -> None:
    fake_nvml.fail_init(ERROR_CODES["NVML_ERROR_LIBRARY_NOT_FOUND"])
    with pytest.raises(NVMLError) as caught:
        fake_nvml.nvmlInit()
    assert caught.value.value == ERROR_CODES["NVML_ERROR_LIBRARY_NOT_FOUND"]


def test_block_until_release(fake_nvml: FakePynvml) -> None:
    fake_nvml.nvmlInit()
    fake_nvml.block("nvmlDeviceGetSerial", gpu=0)
    handle0, handle1 = FakeHandle(0), FakeHandle(1)
    assert fake_nvml.nvmlDeviceGetSerial(handle1)  # another GPU still answers
    done = threading.Event()

    def read_blocked() -> None:
        fake_nvml.nvmlDeviceGetSerial(handle0)
        done.set()

    worker = threading.Thread(target=read_blocked, daemon=True)
    worker.start()
    assert not done.wait(0.2)  # still blocked (a lower bound: holds however loaded)
    fake_nvml.release()
    assert done.wait(60.0)  # answered once released (the 60 s only stops a hang)
    again = threading.Thread(target=fake_nvml.nvmlDeviceGetSerial, args=(handle0,), daemon=True)
    again.start()
    again.join(60.0)
    assert not again.is_alive()  # no longer blocked
    assert [c.gpu for c in fake_nvml.calls_to("nvmlDeviceGetSerial")] == [1, 0, 0]
