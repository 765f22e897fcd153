#!/usr/bin/env python3
"""Coverage-guided fuzzing (atheris, libFuzzer) of the TensorRT build-log scanner.

Run by hand, for longer than the hypothesis suite runs (docs/RELIABILITY.md records the runs)::

    .venv/bin/python tests/fuzz/atheris_trt.py [CORPUS_DIR] \\
        -max_total_time=600 -rss_limit_mb=2048 -timeout=10

A crash, an input running past -timeout or memory past -rss_limit_mb stops it, input saved.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

import atheris  # noqa: E402

with atheris.instrument_imports(include=["sitscheck"]):
    from fuzz_targets import atheris_main

if __name__ == "__main__":
    atheris_main(["trt_log"])
