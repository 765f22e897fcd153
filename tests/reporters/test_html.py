"""The html reporter (`-o html=FILE`) and the soak's trace it draws (issue 30, "Recording,
replay and pictures"), over replays of the recorded H200 bundles with a soak record
(tests/reporters/soak_bundle.py). The page in a real browser: test_html_browser.py."""

from __future__ import annotations

import json
import math
import random
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from msgspec.structs import replace
from sitscheck.app import RunRequest, execute
from sitscheck.checks.soak.series import soak_series
from sitscheck.config import RunConfig
from sitscheck.contract.phase_record import Entry
from sitscheck.models import (
    CheckResult,
    Device,
    Evidence,
    Finding,
    Layer,
    Level,
    Moment,
    Report,
    Series,
    SeriesLine,
    Severity,
    Status,
    Verdict,
)
from sitscheck.reporters.html import CSP, render_html
from sitscheck.reporters.json_report import render_json
from sitscheck.reporters.outputs import deliver, parse_outputs
from sitscheck.reporters.table import render_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak_bundle import NODES, SECONDS, soak_bundle, soak_record

SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "report.schema.json"
CHART = re.compile(r'<svg class="trace"')


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Report]:
    """The soak (and the driver: a passive check beside it) replayed on 1 and 2 H200s."""
    out = {}
    for gpus in NODES:
        folder = soak_bundle(tmp_path_factory.mktemp("bundle") / f"h200x{gpus}", gpus)
        out[gpus] = execute(RunRequest(RunConfig(checks=["driver", "soak"]), str(folder)))
    return out


def soak(report: Report) -> CheckResult:
    found = report.check("soak")
    assert found is not None
    return found


@pytest.mark.parametrize("gpus", sorted(NODES))
def test_the_soak_hands_each_gpus_trace_as_series(reports: dict[int, Report], gpus: int) -> None:
    check = soak(reports[gpus])
    assert check.status == Status.OK, check.error
    identities = NODES[gpus][1]
    assert [(s.device.index, s.device.uuid, s.device.pci_bus_id) for s in check.series] == [
        (index, uuid, bus) for index, uuid, bus in identities
    ]
    for series, facts in zip(check.series, check.facts["gpus"], strict=True):
        names = [line.name for line in series.lines]
        assert names == ["sm_clock_mhz", "power_w", "temp_c", "mem_temp_c", "iteration_ms"]
        for line in series.lines:  # per-second points, never every iteration
            assert len(line.t) == len(line.values) <= SECONDS + 1
            assert all(later > earlier for earlier, later in zip(line.t, line.t[1:], strict=False))
        assert series.device.name == "NVIDIA H200"
        assert [m.t for m in series.moments] == [facts["steady_from_s"]]
        assert {(lv.unit, lv.value) for lv in series.levels} == {("Cel", 83.0), ("W", 700.0)}
        iteration = series.lines[-1]
        steady = [v for t, v in zip(iteration.t, iteration.values, strict=True) if t >= 5]
        assert all(v is not None and 1.6 < v < 1.7 for v in steady)  # the batches' medians


def test_a_figure_nvml_never_read_is_left_out_and_a_gap_stays_a_gap() -> None:
    record = soak_record(NODES[1][1], random.Random(1))
    raw = record["gpus"][0]
    result = raw["result"]
    for sample in result["samples"]:
        sample["mem_temp_c"] = None  # no HBM temperature on this board
    result["samples"][10]["power_w"] = None  # one reading failed
    result["samples"][11]["sm_clock_mhz"] = math.nan
    entry = Entry(raw["index"], raw["uuid"], raw["pci_bus_id"], raw["name"], "ok", None, None,
                  result)  # fmt: skip
    series = soak_series(entry, result, result["samples"], 5.0)
    lines = {line.name: line for line in series.lines}
    assert "mem_temp_c" not in lines
    assert lines["power_w"].values[10] is None
    assert lines["sm_clock_mhz"].values[11] is None
    assert soak_series(entry, {}, [], None).lines == []


def test_a_series_line_pairs_every_time_with_a_value() -> None:
    with pytest.raises(ValueError, match="2 times for 1 values"):
        SeriesLine(name="power_w", label="power", unit="W", t=[0.0, 1.0], values=[1.0])


@pytest.mark.parametrize("gpus", sorted(NODES))
def test_the_page_draws_one_chart_per_gpu_named_by_index_uuid_and_model(
    reports: dict[int, Report], gpus: int
) -> None:
    page = render_html(reports[gpus])
    assert len(CHART.findall(page)) == gpus
    for index, uuid, _bus in NODES[gpus][1]:
        assert f"<title>GPU {index} · NVIDIA H200 · {uuid}" in page
        assert f'data-gpu="{index}"' in page
    for text in ("steady state from 5 s", "83 °C: clocks scale down", "power limit 700 W",
                 "(MHz)", "(W)", "(°C)", "(ms)", "time since the load started (s)"):  # fmt: skip
        assert text in page


def test_a_report_without_a_soak_has_verdicts_and_no_chart(tmp_path: Path) -> None:
    folder = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v1"
    report = execute(RunRequest(RunConfig(checks=["driver", "soak"]), str(folder)))
    page = render_html(report)
    assert "<svg" not in page
    assert report.headline in page
    assert "measured only by `sitscheck accept`" in page  # the soak's skip reason


def test_the_page_fetches_nothing(reports: dict[int, Report]) -> None:
    page = render_html(reports[2], verbose=True)
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert "default-src 'none'" in CSP
    for external in ("://", "<script", "<link", "<img", "<iframe", "@import", "url("):
        assert external not in page.lower()
    assert not {"src", "href", "srcset", "action", "data"} & attributes(page)


HOSTILE = '<script>alert(1)</script><img src="http://x.invalid/a.png">\x1b[31m\u202edone'


def attributes(page: str) -> set[str]:
    """The names of every attribute of every element of the page, as a browser parses it."""
    found: set[str] = set()

    class Names(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.update(name for name, _ in attrs)

    Names().feed(page)
    return found


def hostile_report() -> Report:
    device = Device(index=0, pci_bus_id=HOSTILE, name=HOSTILE, uuid=HOSTILE)
    finding = Finding(
        code=HOSTILE,
        severity=Severity.CRITICAL,
        message=HOSTILE,
        device=device,
        action=HOSTILE,
        evidence=[Evidence(source=HOSTILE, ref=HOSTILE, excerpt=f"</pre>{HOSTILE}\nline 2")],
    )
    line = SeriesLine(name=HOSTILE, label=HOSTILE, unit=HOSTILE, t=[0.0, 1.0], values=[1.0, 2.0])
    series = Series(
        device=device,
        lines=[line],
        moments=[Moment(t=0.5, label=HOSTILE)],
        levels=[Level(value=1.5, unit=HOSTILE, label=HOSTILE)],
    )
    check = CheckResult(
        name=HOSTILE,
        status=Status.CRITICAL,
        error=HOSTILE,
        skip_reason=HOSTILE,
        findings=[finding],
        not_judged=[HOSTILE],
        series=[series],
    )
    return Report(
        sitscheck_version="0",
        host=HOSTILE,
        started_at=HOSTILE,
        duration_s=1.0,
        status=Status.CRITICAL,
        headline=HOSTILE,
        mode="replay",
        bundle=HOSTILE,
        profile=HOSTILE,
        checks=[check],
    )


def test_every_text_from_the_node_is_escaped_and_made_printable() -> None:
    page = render_html(hostile_report(), verbose=True)
    lowered = page.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert not {"src", "href"} & attributes(page)  # the URL stays text
    assert "\x1b" not in page
    assert "\u202e" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("&lt;script&gt;") >= 15  # host, headline, check, finding, series...
    assert len(CHART.findall(page)) == 1


def test_the_json_report_carries_the_series_and_matches_its_schema(
    reports: dict[int, Report],
) -> None:
    document = json.loads(render_json(reports[2]))
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(
        document
    )
    (check,) = [c for c in document["checks"] if c["name"] == "soak"]
    assert [s["device"]["index"] for s in check["series"]] == [0, 1]
    (driver,) = [c for c in document["checks"] if c["name"] == "driver"]
    assert driver["series"] == []


def test_html_is_an_output_written_to_its_file(reports: dict[int, Report], tmp_path: Path) -> None:
    target = tmp_path / "reports" / "accept.html"
    deliver(reports[1], parse_outputs([f"html={target}"]), verbose=False)
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert len(CHART.findall(page)) == 1


def test_the_page_puts_the_root_cause_first_as_the_table_does(
    reports: dict[int, Report],
) -> None:
    gpu1 = Device(index=1, pci_bus_id="00000000:00:07.0")
    verdicts = [
        Verdict(rule="soak.temp_high", status=Status.WARNING, message="GPU 1 reached 86 °C",
                device=gpu1, explained_by=["soak.hw_slowdown"]),
        Verdict(rule="soak.hw_slowdown", status=Status.CRITICAL, layer=Layer.HARDWARE,
                message="GPU 1: hardware slowdown for 20 s", device=gpu1,
                action="check its cooling", explains=["soak.temp_high"]),
        Verdict(rule="soak.iteration_cv", status=Status.UNKNOWN, message="jitter",
                reason="no iteration times", device=gpu1),
    ]  # fmt: skip
    report = replace(reports[2], verdicts=verdicts)
    page = render_html(report)
    text = render_text(report)
    diagnosis = page[page.index("Diagnosis") : page.index("<h2>Checks")]
    assert diagnosis.index("hardware slowdown") < diagnosis.index("explains")
    assert "action: check its cooling" in diagnosis
    assert "explains" in diagnosis and "reached 86 °C" in diagnosis
    assert text.index("hardware slowdown") < text.index("explains")  # the same order
    unjudged = page[page.index("Rules not judged") :]
    assert "soak.iteration_cv" in unjudged and "no iteration times" in unjudged


@pytest.mark.parametrize(
    ("t", "values"),
    [
        ([0.0, 1.0, 2.0], [1e308, -1e308, 0.0]),
        ([0.0, 1e308, 2.0], [1.0, 2.0, 3.0]),
        ([0.0, 1.0], [-1e308, -1e308]),
        ([0.0, 1.0], [5e-324, 0.0]),
        ([0.0, 1.0], [0.0, 0.0]),
        ([-5.0, -1.0], [3.0, 3.0]),
        ([0.0, math.inf], [1.0, math.nan]),
        ([0.0, 1.0], [None, None]),
    ],
)
def test_any_numbers_a_bundle_holds_are_drawn_or_left_out_never_a_crash(
    t: list[float], values: list[float | None]
) -> None:
    line = SeriesLine(name="power_w", label="power", unit="W", t=t, values=values)
    series = Series(device=Device(index=0), lines=[line],
                    levels=[Level(value=1e308, unit="W", label="limit")],
                    moments=[Moment(t=math.nan, label="steady state")])  # fmt: skip
    report = replace(
        hostile_report(), checks=[CheckResult(name="soak", status=Status.OK, series=[series])]
    )
    page = render_html(report)
    assert "inf" not in page.lower().replace("infiniband", "")
    assert "nan" not in page.lower()
