"""A thin NVML wrapper: every call under a deadline, outcomes kept apart.

`read()` never raises for a device-level failure: it returns a `Reading` whose `state` says
whether the value is real (`ok`), the GPU does not support it (`not_supported`, which is not
zero and not an error), the call failed (`error`, `no_permission`), overran its deadline
(`timeout`), or the GPU is gone (`gpu_lost`, `reset_required`). pynvml is imported lazily,
only by a run that talks to a live driver.

Each call waits at most NVML's own deadline (`nvml_deadline_s`) and never past the deadline of
the work that owns it (the check whose scope the call runs in, `scope.work_deadline`): a
call that hangs ends that check UNKNOWN naming the call ("… did not answer within 3.6 s (what
was left of its deadline)"), not "timed out". A hung call's thread cannot be killed (it is
blocked in C): it is a daemon thread, abandoned, and never holds up the process's exit.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Generic, Literal, TypeVar

from msgspec import Struct

from ..errors import ProbeError, ProbeTimeout
from .deadline import DeadlineCaller
from .scope import waiting_on, work_deadline

T = TypeVar("T")

ReadingState = Literal[
    "ok", "not_supported", "no_permission", "error", "timeout", "gpu_lost", "reset_required"
]

_STATE_BY_ERROR_NAME: dict[str, ReadingState] = {
    "NVML_ERROR_NOT_SUPPORTED": "not_supported",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "not_supported",
    "NVML_ERROR_NO_PERMISSION": "no_permission",
    "NVML_ERROR_GPU_IS_LOST": "gpu_lost",
    "NVML_ERROR_RESET_REQUIRED": "reset_required",
}
_NO_DRIVER_ERRORS = ("NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIBRARY_NOT_FOUND")


class Reading(Struct, Generic[T], frozen=True):
    """One NVML value, or why there is none: `state` (ok, not_supported, error, ...), `detail`."""

    value: T | None
    state: ReadingState = "ok"
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"


class NvmlUnavailable(ProbeError):
    """NVML cannot be used at all. `no_driver` says whether that is because no driver exists."""

    def __init__(self, message: str, no_driver: bool) -> None:
        super().__init__(message)
        self.no_driver = no_driver


class _NotStarted(ProbeTimeout):
    """The owner's deadline had passed before the call: it was not made."""


class NvmlCallError(ProbeError):
    def __init__(self, call: str, state: ReadingState, detail: str) -> None:
        super().__init__(f"{call}: {detail}")
        self.call = call
        self.state = state


class Nvml:
    """One NVML session; `lib` is the pynvml module (or a stand-in with the same names)."""

    def __init__(self, lib: Any, deadline_s: float = 5.0) -> None:
        self._lib = lib
        self._deadline_s = deadline_s
        self._caller = DeadlineCaller("nvml")
        self._init_lock = threading.Lock()
        self._initialised = False
        self._stuck_at: str | None = None

    @classmethod
    def load(cls, deadline_s: float = 5.0) -> Nvml:
        try:
            import pynvml
        except ImportError as exc:  # the dependency is declared; a broken install lands here
            raise NvmlUnavailable(f"pynvml cannot be imported: {exc}", no_driver=False) from exc
        return cls(pynvml, deadline_s)

    @property
    def lib(self) -> Any:
        return self._lib

    def init(self) -> None:
        with self._init_lock:
            if self._initialised:
                return
            try:
                self._bounded(self._lib.nvmlInit, "nvmlInit")
            except ProbeTimeout as exc:
                raise NvmlUnavailable(str(exc), no_driver=False) from exc
            except Exception as exc:
                name = self._error_name(exc)
                raise NvmlUnavailable(
                    f"nvmlInit failed: {self._describe(exc)}", no_driver=name in _NO_DRIVER_ERRORS
                ) from exc
            self._initialised = True

    def shutdown(self) -> None:
        with self._init_lock:
            if self._initialised and self._stuck_at is None:  # a wedged driver: don't wait again
                try:
                    self._caller.call(self._lib.nvmlShutdown, self._deadline_s, "nvmlShutdown")
                except Exception:
                    pass
                self._initialised = False
        self._caller.close()

    def call(self, function: str, *args: Any) -> Any:
        """fn(*args) under the deadline; raises NvmlCallError naming the call."""
        label = self._label(function, args)
        fn = getattr(self._lib, function, None)
        if fn is None:
            raise NvmlCallError(label, "not_supported", "not in this NVML binding")
        if self._stuck_at is not None:
            # One call that never returned means the driver is wedged: every later call would
            # cost its own deadline. Fail fast, naming the call that hung.
            raise NvmlCallError(
                label, "timeout", f"not tried: NVML stopped answering at {self._stuck_at}"
            )
        try:
            return self._bounded(lambda: fn(*args), label)
        except _NotStarted as exc:
            raise NvmlCallError(label, "timeout", str(exc)) from exc
        except ProbeTimeout as exc:
            self._stuck_at = self._stuck_at or label
            raise NvmlCallError(label, "timeout", str(exc)) from exc
        except NvmlCallError:
            raise
        except Exception as exc:
            state = _STATE_BY_ERROR_NAME.get(self._error_name(exc) or "", "error")
            raise NvmlCallError(label, state, self._describe(exc)) from exc

    def _bounded(self, fn: Any, label: str) -> Any:
        """fn() on a lane, waiting at most NVML's deadline and what is left of its owner's."""
        timeout, clamped = self._deadline_s, False
        owner = work_deadline()
        if owner is not None and owner - time.monotonic() < timeout:
            timeout, clamped = owner - time.monotonic(), True
            if timeout <= 0:
                raise _NotStarted("not tried: its caller's deadline had passed")
        with waiting_on(label):
            try:
                return self._caller.call(fn, timeout, label)
            except ProbeTimeout:
                if not clamped:
                    raise
                raise ProbeTimeout(
                    f"{label} did not answer within {timeout:.1f} s (what was left of its deadline)"
                ) from None

    @property
    def stuck_at(self) -> str | None:
        """The call that overran its deadline, after which NVML is not asked again."""
        return self._stuck_at

    def read(self, function: str, *args: Any) -> Reading[Any]:
        try:
            return Reading(self.call(function, *args))
        except NvmlCallError as exc:
            return Reading(None, exc.state, str(exc))

    def return_state(self, code: object) -> ReadingState:
        """The state of a return code NVML puts in a struct rather than raising (each entry of
        `nvmlDeviceGetFieldValues`, each metric of `nvmlGpmMetricsGet`): 0 is `ok`; "not
        supported" is kept apart from the errors."""
        if code == 0:
            return "ok"
        name = self.error_name(code) or ""
        if name == "NVML_ERROR_INVALID_ARGUMENT":
            # in a field value or a GPM metric: an id this driver does not know (a field added
            # by a later driver), which is "not supported here", not a failed read
            return "not_supported"
        return _STATE_BY_ERROR_NAME.get(name, "error")

    def error_name(self, code: object) -> str | None:
        """`NVML_ERROR_NOT_SUPPORTED` for 3, as the binding names its return codes."""
        if not isinstance(code, int) or isinstance(code, bool):
            return None
        for name in dir(self._lib):
            if name.startswith("NVML_ERROR_") and getattr(self._lib, name) == code:
                return name
        return None

    def _error_name(self, exc: BaseException) -> str | None:
        return self.error_name(getattr(exc, "value", None))

    def _describe(self, exc: BaseException) -> str:
        name = self._error_name(exc)
        text = str(exc) or type(exc).__name__
        return f"{text} ({name})" if name and name not in text else text

    @staticmethod
    def _label(function: str, args: tuple[Any, ...]) -> str:
        shown = [a if isinstance(a, int | str) else "handle" for a in args]
        return f"{function}({', '.join(str(a) for a in shown)})"
