"""What a workload child prints: one JSON object a line, flushed at once.

{"event": "ready", "engine": "torch"}            the GPU is set up, the work starts
{"event": "doing", "what": "memtest: random, pass 3"}   what it does now (named if it hangs)
{"event": "figure", "value": 661.2, "unit": "TFLOP/s"}  the current figure (progress)
{"event": "times", "ms": [1.65, ...]}            soak: the iterations finished since the last
{"event": "result", ...}                         the phase's record for this GPU (last line)
{"event": "error", "reason": "..."}              it could not do its work (last line)
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from types import FrameType


class Channel:
    """The child's side: lines on stdout, and the stop flag SIGTERM/SIGINT set."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.stopped_by: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopped_by = signal.Signals(signum).name
        self.stop.set()

    def send(self, event: str, **fields: object) -> None:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()

    def doing(self, what: str) -> None:
        self.send("doing", what=what)
