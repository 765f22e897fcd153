"""The second example plugin (examples/plugins/bar1_memory), loaded from its folder rather
than installed: a check that reads one NVML value no built-in reads
(`nvmlDeviceGetBAR1MemoryInfo`), declared in its own `check.py` and named by no file of
sitscheck. Live (the recorded 2×H200 node's NVML, faked, answering the declared call),
`collect` and the replay of what was collected give the same facts; its recorded bundle
replays through it with its rule (the installed package: tests/plugins, slow)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from bar1_plugin import BUNDLE, KEY, RULES, SRC, recording
from corpus_paths import REPO_ROOT
from fakes.fake_pynvml import FakePynvml
from fakes.nvml_node import fake_nvml_sources
from sitscheck import app
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.contract.runner import run_checks
from sitscheck.models import CheckResult, Report, Status
from sitscheck.sources.bundle_writer import open_bundle_writer
from sitscheck.sources.collect import collect_bundle
from sitscheck.sources.replay import ReplaySources

if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from sitscheck_bar1_memory.check import BAR1, Bar1MemoryCheck


def test_no_file_of_sitscheck_names_it() -> None:
    """Its NVML call reaches the snapshot, `collect` and replays through its declaration only
    (nvidia-smi's own words for BAR1, which its parsers read, are no mention of the plugin)."""
    named = re.compile(r"bar1_memory|BAR1Memory", re.IGNORECASE)
    for folder in ("healthcheck", "checks", "rules"):
        for path in (REPO_ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                assert not named.search(path.read_text(errors="replace")), path


def test_live_collect_and_replay_give_the_same_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakePynvml(recording(), declared={BAR1.function: BAR1.key})
    declared = gather([Bar1MemoryCheck()])
    assert declared.nvml and declared.nvml_reads == {KEY: BAR1}
    live = fake_nvml_sources(tmp_path, monkeypatch, fake, declared.nvml_reads)
    bundle = tmp_path / "bundle"
    try:
        (now,) = run_checks([Bar1MemoryCheck()], live, RunConfig())
        with open_bundle_writer(bundle) as out:
            collect_bundle(live, out, declared)
    finally:
        live.close()
    assert len(fake.calls_to(BAR1.function)) == 2  # once per GPU, with its inventory
    assert sorted(p.name for p in bundle.iterdir()) == ["meta.json", "nvml.json"]
    written = json.loads((bundle / "nvml.json").read_text())["gpus"]
    assert [g[KEY] for g in written] == [g[KEY] for g in recording()["gpus"]]
    (replayed,) = run_checks([Bar1MemoryCheck()], ReplaySources(bundle), RunConfig())
    assert now.status == replayed.status == Status.OK, (now, replayed)
    assert now.facts["source"] == "nvml" and replayed.facts["source"] == "nvml.json"
    assert now.facts["gpus"] == replayed.facts["gpus"]
    assert [(g["total_mib"], g["used_mib"]) for g in now.facts["gpus"]] == [(262144, 1)] * 2


def test_its_recorded_bundle_replays_through_it_with_its_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = _replay(monkeypatch, BUNDLE)
    check = _check(report)
    assert check.status == Status.OK, check
    assert [g["pci_bus_id"] for g in check.facts["gpus"]] == ["0000:00:06.0", "0000:00:07.0"]
    assert _verdicts(report) == {None: "ok"}  # judged on every GPU, fired on none


def test_a_full_aperture_in_an_edited_recording_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    data = json.loads((BUNDLE / "nvml.json").read_text())
    bar1 = data["gpus"][1][KEY]
    bar1["bar1Used"], bar1["bar1Free"] = bar1["bar1Total"], 0
    (bundle / "nvml.json").write_text(json.dumps(data))
    report = _replay(monkeypatch, bundle)
    (finding,) = _check(report).findings
    assert finding.code == "bar1_memory.exhausted" and finding.device is not None
    assert finding.device.index == 1
    assert _verdicts(report) == {1: "warning"}


def test_an_older_bundle_without_its_reading_skips_it(monkeypatch: pytest.MonkeyPatch) -> None:
    older = REPO_ROOT / "tests" / "bundles" / "h200x2-idle-v0"
    check = _check(_replay(monkeypatch, older))
    assert check.status == Status.SKIPPED
    assert check.skip_reason == (
        "nvml.json was recorded without bar1_memory (by a sitscheck without the check)"
    )


# --------------------------------------------------------------------------- helpers


def _replay(monkeypatch: pytest.MonkeyPatch, bundle: Path) -> Report:
    """`run --from BUNDLE --rules RULES` with the plugin's check the one selected (it is not
    installed: its entry point would be what makes sitscheck select it)."""
    monkeypatch.setattr(app, "selected_checks", lambda config: [Bar1MemoryCheck()])
    config = RunConfig(rules_dirs=[RULES])
    return execute(RunRequest(config, str(bundle)))


def _check(report: Report) -> CheckResult:
    (check,) = [c for c in report.checks if c.name == "bar1_memory"]
    return check


def _verdicts(report: Report) -> dict[int | None, str]:
    return {
        v.device.index if v.device else None: v.status.value
        for v in report.verdicts
        if v.rule == "bar1_memory.nearly_full"
    }
