"""The topology judge, the TensorRT log scanner and the InfiniBand judge give, for every input
of `judged.py` (the corpus's texts and trees), the block recorded in `<check>.txt`. A
difference fails with the unified diff of the input's block."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from judged import CHECKS, RECORDED, inputs, read_recorded  # noqa: E402

# the split judges against the old code over every corpus text (~5 CPU-s): in the slow suite
pytestmark = pytest.mark.slow

CASES = [(check, name) for check in CHECKS for name in inputs(check)]


@pytest.mark.parametrize("check", CHECKS)
def test_every_input_is_recorded_and_every_record_has_its_input(check: str) -> None:
    assert list(read_recorded(check)) == list(inputs(check))


@pytest.mark.parametrize(("check", "name"), CASES, ids=["/".join(case) for case in CASES])
def test_an_input_gives_its_recorded_block(check: str, name: str) -> None:
    now = inputs(check)[name]()
    kept = read_recorded(check)[name]
    if now != kept:
        where = f"{RECORDED / check}.txt: {name}"
        diff = difflib.unified_diff(kept, now, where, "now", lineterm="")
        pytest.fail("\n".join([f"{check} {name}: differs from the record", *diff]), False)
