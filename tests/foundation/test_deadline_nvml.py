"""`DeadlineCaller` (a call never blocks its caller past the deadline) and the `Nvml` wrapper.

A hung call is a call waiting on `gate`, which opens when the test ends (or, if the code under
test waited for the hung call, after `RELEASE_S`, so that such a bug fails instead of hanging
the suite). The fast tests assert what happened: the caller got its timeout while the call
was still blocked, the wedged driver was not asked again. How long the caller waited is a
slow test's, with a margin that holds on a loaded machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fakes.fake_pynvml import ERROR_CODES, NVMLError
from sitscheck.errors import ProbeTimeout
from sitscheck.sources.deadline import DeadlineCaller
from sitscheck.sources.nvml import Nvml, NvmlCallError, NvmlUnavailable

RELEASE_S = 60.0  # a hung call returns after this at the latest (a bug, not a hang)
LOADED_SLACK_S = 10.0  # past its deadline, what a caller may take on a loaded 2-core machine


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event blocked calls wait on; set at teardown (or after RELEASE_S) so they end."""
    event = threading.Event()
    release = threading.Timer(RELEASE_S, event.set)
    release.daemon = True
    release.start()
    yield event
    event.set()
    release.cancel()


@pytest.fixture
def caller() -> Iterator[DeadlineCaller]:
    pool = DeadlineCaller("test")
    yield pool
    pool.close()


# ---- DeadlineCaller ---------------------------------------------------------------------


def test_returns_the_value(caller: DeadlineCaller) -> None:
    assert caller.call(lambda: {"answer": 42}, 1.0, "answer") == {"answer": 42}
    assert caller.abandoned == 0


def test_runs_the_call_on_another_thread(caller: DeadlineCaller) -> None:
    assert caller.call(threading.get_ident, 1.0, "ident") != threading.get_ident()


def test_reraises_the_calls_own_exception(caller: DeadlineCaller) -> None:
    error = KeyError("gpu 3")

    def fail() -> None:
        raise error

    with pytest.raises(KeyError) as caught:
        caller.call(fail, 1.0, "fail")
    assert caught.value is error
    assert caller.abandoned == 0
    assert caller.call(lambda: "still works", 1.0, "after") == "still works"


def test_blocking_call_times_out_while_the_call_is_still_blocked(
    caller: DeadlineCaller, gate: threading.Event
) -> None:
    started = time.monotonic()
    with pytest.raises(ProbeTimeout) as caught:
        caller.call(gate.wait, 0.3, "nvmlDeviceGetPowerUsage(handle)")
    assert time.monotonic() - started >= 0.3  # never before its deadline
    assert not gate.is_set()  # the caller did not wait for the call
    assert "nvmlDeviceGetPowerUsage(handle) did not return within 0.3s" in str(caught.value)
    assert caller.abandoned == 1


def test_later_calls_work_on_a_fresh_lane(caller: DeadlineCaller, gate: threading.Event) -> None:
    stuck: dict[str, int] = {}

    def block() -> None:
        stuck["ident"] = threading.get_ident()
        gate.wait()

    with pytest.raises(ProbeTimeout):
        caller.call(block, 0.2, "block")
    first = caller.call(threading.get_ident, 1.0, "after")
    second = caller.call(threading.get_ident, 1.0, "again")
    assert not gate.is_set()  # answered while the first call is still blocked
    assert first != stuck["ident"]  # never queued behind the blocked call
    assert second == first  # a healthy lane is reused
    assert caller.abandoned == 1


def test_two_blocked_calls_are_each_abandoned(
    caller: DeadlineCaller, gate: threading.Event
) -> None:
    for _ in range(2):
        with pytest.raises(ProbeTimeout):
            caller.call(gate.wait, 0.2, "block")
    assert not gate.is_set()
    assert caller.abandoned == 2
    assert caller.call(lambda: 7, 1.0, "ok") == 7


@pytest.mark.slow
def test_a_blocked_call_costs_its_deadline_not_the_hang(
    caller: DeadlineCaller, gate: threading.Event
) -> None:
    """Two calls that hang until RELEASE_S cost their two deadlines (a generous margin)."""
    started = time.monotonic()
    for _ in range(2):
        with pytest.raises(ProbeTimeout):
            caller.call(gate.wait, 0.5, "block")
    assert time.monotonic() - started < 2 * 0.5 + LOADED_SLACK_S < RELEASE_S


# ---- Nvml wrapper -----------------------------------------------------------------------


def stand_in(**functions: Any) -> SimpleNamespace:
    """A pynvml-like module: NVML_ERROR_* constants, NVMLError, and the given functions."""
    module = SimpleNamespace(NVMLError=NVMLError, **ERROR_CODES)
    module.nvmlInit = lambda: None
    module.nvmlShutdown = lambda: None
    for name, fn in functions.items():
        setattr(module, name, fn)
    return module


def raising(code: int) -> Any:
    def fn(*_args: Any) -> Any:
        raise NVMLError(code)

    return fn


def test_read_returns_the_value() -> None:
    nvml = Nvml(stand_in(nvmlDeviceGetTemperature=lambda handle, sensor: 41 + sensor), 1.0)
    reading = nvml.read("nvmlDeviceGetTemperature", object(), 1)
    assert reading.ok and reading.state == "ok" and reading.value == 42


@pytest.mark.parametrize(
    ("error", "state"),
    [
        ("NVML_ERROR_NOT_SUPPORTED", "not_supported"),
        ("NVML_ERROR_FUNCTION_NOT_FOUND", "not_supported"),
        ("NVML_ERROR_NO_PERMISSION", "no_permission"),
        ("NVML_ERROR_GPU_IS_LOST", "gpu_lost"),
        ("NVML_ERROR_RESET_REQUIRED", "reset_required"),
        ("NVML_ERROR_UNKNOWN", "error"),
        ("NVML_ERROR_INVALID_ARGUMENT", "error"),
    ],
)
def test_nvml_error_codes_map_to_states(error: str, state: str) -> None:
    nvml = Nvml(stand_in(nvmlDeviceGetPowerUsage=raising(ERROR_CODES[error])), 1.0)
    reading = nvml.read("nvmlDeviceGetPowerUsage", object())
    assert reading.state == state
    assert reading.value is None and not reading.ok
    assert reading.detail is not None
    assert "nvmlDeviceGetPowerUsage(handle)" in reading.detail
    assert error in reading.detail  # the NVML name is kept for the operator


def test_not_supported_is_not_zero_and_not_an_error() -> None:
    nvml = Nvml(
        stand_in(
            nvmlDeviceGetFanSpeed=raising(ERROR_CODES["NVML_ERROR_NOT_SUPPORTED"]),
            nvmlDeviceGetPowerUsage=lambda handle: 0,
        ),
        1.0,
    )
    unsupported = nvml.read("nvmlDeviceGetFanSpeed", object())
    zero = nvml.read("nvmlDeviceGetPowerUsage", object())
    assert (unsupported.state, unsupported.value) == ("not_supported", None)
    assert (zero.state, zero.value) == ("ok", 0)


def test_a_function_missing_from_the_binding_is_not_supported() -> None:
    reading = Nvml(stand_in(), 1.0).read("nvmlDeviceGetC2cModeInfoV", object())
    assert reading.state == "not_supported"
    assert reading.detail is not None and "nvmlDeviceGetC2cModeInfoV" in reading.detail


def test_an_exception_without_a_code_is_an_error() -> None:
    def broken(handle: Any) -> Any:
        raise RuntimeError("ctypes blew up")

    reading = Nvml(stand_in(nvmlDeviceGetName=broken), 1.0).read("nvmlDeviceGetName", object())
    assert reading.state == "error"
    assert reading.detail is not None and "ctypes blew up" in reading.detail


def test_call_raises_an_error_naming_the_call_with_its_arguments() -> None:
    nvml = Nvml(stand_in(nvmlDeviceGetNvLinkState=raising(ERROR_CODES["NVML_ERROR_GPU_IS_LOST"])))
    with pytest.raises(NvmlCallError) as caught:
        nvml.call("nvmlDeviceGetNvLinkState", object(), 5)
    assert caught.value.state == "gpu_lost"
    assert caught.value.call == "nvmlDeviceGetNvLinkState(handle, 5)"


def test_blocking_call_reads_as_timeout_naming_the_call(gate: threading.Event) -> None:
    nvml = Nvml(stand_in(nvmlDeviceGetUtilizationRates=lambda handle: gate.wait()), 0.3)
    reading = nvml.read("nvmlDeviceGetUtilizationRates", object())
    assert not gate.is_set()  # read while the call is still blocked
    assert reading.state == "timeout"
    assert reading.detail is not None and "nvmlDeviceGetUtilizationRates(handle)" in reading.detail
    assert nvml.stuck_at == "nvmlDeviceGetUtilizationRates(handle)"


def test_after_a_hung_call_nvml_fails_fast_naming_it(gate: threading.Event) -> None:
    calls: list[str] = []

    def power(handle: Any) -> int:
        calls.append("power")
        return 70000

    def utilization(handle: Any) -> None:
        calls.append("utilization")
        gate.wait()

    nvml = Nvml(
        stand_in(nvmlDeviceGetUtilizationRates=utilization, nvmlDeviceGetPowerUsage=power), 0.3
    )
    assert nvml.read("nvmlDeviceGetPowerUsage", object()).value == 70000
    assert nvml.read("nvmlDeviceGetUtilizationRates", object()).state == "timeout"
    later = [nvml.read("nvmlDeviceGetPowerUsage", object()) for _ in range(20)]
    later.append(nvml.read("nvmlDeviceGetUtilizationRates", object()))
    assert calls == ["power", "utilization"]  # the wedged driver is not asked again: no waits
    assert {r.state for r in later} == {"timeout"}
    assert later[0].detail is not None
    assert "nvmlDeviceGetUtilizationRates(handle)" in later[0].detail


def test_init_failure_without_a_driver_says_so() -> None:
    nvml = Nvml(stand_in(nvmlInit=raising(ERROR_CODES["NVML_ERROR_DRIVER_NOT_LOADED"])), 1.0)
    with pytest.raises(NvmlUnavailable) as caught:
        nvml.init()
    assert caught.value.no_driver
    assert "nvmlInit" in str(caught.value) and "NVML_ERROR_DRIVER_NOT_LOADED" in str(caught.value)


def test_init_failure_with_a_driver_is_not_no_driver() -> None:
    nvml = Nvml(stand_in(nvmlInit=raising(ERROR_CODES["NVML_ERROR_LIB_RM_VERSION_MISMATCH"])), 1.0)
    with pytest.raises(NvmlUnavailable) as caught:
        nvml.init()
    assert not caught.value.no_driver


def test_init_that_blocks_is_unavailable_while_it_still_blocks(gate: threading.Event) -> None:
    nvml = Nvml(stand_in(nvmlInit=gate.wait), 0.3)
    with pytest.raises(NvmlUnavailable) as caught:
        nvml.init()
    assert not gate.is_set()
    assert "nvmlInit" in str(caught.value)


@pytest.mark.slow
def test_a_blocked_read_and_init_cost_their_deadline_not_the_hang(gate: threading.Event) -> None:
    nvml = Nvml(stand_in(nvmlInit=gate.wait), 0.5)
    started = time.monotonic()
    with pytest.raises(NvmlUnavailable):
        nvml.init()
    assert time.monotonic() - started < 0.5 + LOADED_SLACK_S < RELEASE_S
    hung = Nvml(stand_in(nvmlDeviceGetName=lambda handle: gate.wait()), 0.5)
    started = time.monotonic()
    assert hung.read("nvmlDeviceGetName", object()).state == "timeout"
    assert time.monotonic() - started < 0.5 + LOADED_SLACK_S < RELEASE_S


def test_init_once_and_shutdown_once() -> None:
    counts = {"init": 0, "shutdown": 0}

    def init() -> None:
        counts["init"] += 1

    def shutdown() -> None:
        counts["shutdown"] += 1

    nvml = Nvml(stand_in(nvmlInit=init, nvmlShutdown=shutdown), 1.0)
    nvml.init()
    nvml.init()
    nvml.shutdown()
    nvml.shutdown()
    assert counts == {"init": 1, "shutdown": 1}


def test_real_pynvml_errors_map_the_same_way() -> None:
    pynvml = pytest.importorskip("pynvml")

    def lost(handle: Any) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    module = SimpleNamespace(
        **{n: getattr(pynvml, n) for n in dir(pynvml) if n.startswith("NVML_ERROR_")},
        nvmlDeviceGetName=lost,
    )
    assert Nvml(module, 1.0).read("nvmlDeviceGetName", object()).state == "gpu_lost"


def test_shutdown_after_a_hung_call_does_not_wait_again(gate: threading.Event) -> None:
    shutdowns: list[str] = []

    def shutdown() -> None:
        shutdowns.append("nvmlShutdown")
        gate.wait()

    nvml = Nvml(stand_in(nvmlDeviceGetName=lambda handle: gate.wait(), nvmlShutdown=shutdown), 0.5)
    nvml.init()
    assert nvml.read("nvmlDeviceGetName", object()).state == "timeout"
    nvml.shutdown()
    assert shutdowns == []  # the wedged driver is not asked to shut down: nothing to wait for
