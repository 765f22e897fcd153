"""The AER parser and tally give, for every corpus kernel-log sample and every storm input of
the tests, the events and tally recorded in `recorded/aer.txt` (see `aer_recorded.py`: what
the parser before the rewrite of issue 31 made of them). A difference fails with the unified
diff of the input's block."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from aer_recorded import RECORDED, inputs, read_recorded, record, whole  # noqa: E402

# the AER parser against the old one over the corpus, mixes and storms (~5 CPU-s): slow suite
pytestmark = pytest.mark.slow

INPUTS = inputs()
RECORDS = read_recorded()


def test_every_input_is_recorded_and_every_record_has_its_input() -> None:
    assert list(RECORDS) == list(INPUTS)
    assert sum(name.startswith("corpus/") for name in INPUTS) >= 40


@pytest.mark.parametrize("name", list(INPUTS))
def test_an_input_gives_its_recorded_events_and_tally(name: str) -> None:
    now = record(INPUTS[name](), whole(name))
    kept = RECORDS[name]
    if now != kept:
        diff = difflib.unified_diff(kept, now, f"{RECORDED}: {name}", "now", lineterm="")
        pytest.fail("\n".join([f"{name}: the events differ from the recorded ones", *diff]), False)
