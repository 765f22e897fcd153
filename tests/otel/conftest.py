"""Fixtures of the OTLP export tests: the replayed bundle, TLS files, no proxy in the way.

Helpers live in `otel_samples.py` (import that, never `conftest`: other suites import their
own `conftest` by name).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otel_samples import BUNDLE
from sitscheck.models import Report

_PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receivers are on 127.0.0.1: no proxy of the environment in between."""
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="session")
def replayed_report() -> Report:
    """The recorded 2×H200 bundle replayed through the real checks and rules."""
    from sitscheck.app import RunRequest, execute
    from sitscheck.site_config import build_config

    config = build_config({}, {"sample_seconds": 0}, "test")
    return execute(RunRequest(config, str(BUNDLE)))


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[Any]:
    if importlib.util.find_spec("cryptography") is None:
        pytest.skip("TLS tests need the `cryptography` package to make a certificate")
    from receivers import make_tls

    yield make_tls(tmp_path)
