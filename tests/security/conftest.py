"""The security suite uses the repo's test fakes, the OTLP suite's test receivers, the fault
suite's fake node and the TensorRT suite's fake `tensorrt`."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDERS = (HERE, HERE.parent, HERE.parent / "otel", HERE.parent / "packaging")
for folder in (*FOLDERS, HERE.parent / "faults", HERE.parent / "tensorrt"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
