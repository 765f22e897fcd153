"""Fixtures of the GPU-check suite (helpers live in gpu_helpers.py, importable by the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sitscheck.models import Report

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from gpu_helpers import IDLE, run_bundle  # noqa: E402


@pytest.fixture(scope="session")
def idle_report() -> Report:
    return run_bundle(IDLE)
