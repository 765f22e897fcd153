"""The `gpu_telemetry` check's finding codes: none of its own (its thresholds are rules)."""

from __future__ import annotations

from sitscheck.contract import Codes

CODES = Codes(())
