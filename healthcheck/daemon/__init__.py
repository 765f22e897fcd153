"""sitscheck.daemon: state between runs (timer mode and `sitscheck daemon`).

- `cursor`: where the previous run stopped reading the kernel log (`KernelCursor`,
  `filter_since`), pure.
- `deltas`: a report against the previous state (new / persisting / cleared, counter deltas),
  pure.
- `state`: the versioned state file, atomic writes, bad files moved aside, the run lock.
- `session`: one run against the state directory (`DaemonSession`, `apply_daemon_state`).
- `follow`: sources whose kernel log starts after the cursor; the boot id.
- `loop`: the long-running mode with sd_notify and watchdog pings.

Imports here are lazy so `import sitscheck.daemon` costs nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cursor import KernelCursor, LogFollow, filter_since
    from .follow import FollowedSources, current_boot_id
    from .loop import Notifier, serve
    from .session import DaemonSession, apply_daemon_state
    from .state import StateError

__all__ = [
    "DaemonSession",
    "FollowedSources",
    "KernelCursor",
    "LogFollow",
    "Notifier",
    "StateError",
    "apply_daemon_state",
    "current_boot_id",
    "filter_since",
    "serve",
]

_WHERE = {
    "KernelCursor": "cursor",
    "LogFollow": "cursor",
    "filter_since": "cursor",
    "FollowedSources": "follow",
    "current_boot_id": "follow",
    "Notifier": "loop",
    "serve": "loop",
    "DaemonSession": "session",
    "apply_daemon_state": "session",
    "StateError": "state",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
