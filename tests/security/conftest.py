"""The security suite uses the repo's test fakes and the OTLP suite's test receivers."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent, HERE.parent / "otel", HERE.parent / "packaging"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
