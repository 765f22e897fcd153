"""The rules engine: verdicts per node or GPU over check facts; bad files refused at file:line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import sitscheck.engine.loader as loader
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import load_rules
from sitscheck.engine.model import Profile
from sitscheck.engine.yaml_lines import MAX_YAML_BYTES
from sitscheck.errors import RuleError
from sitscheck.models import CheckResult, Status, Verdict

HOT_RULES = """\
params:
  max_temp_c: 85
rules:
  - id: fake.hot
    scope: gpu
    requires: [fake]
    when: gpu.fake.temp_c > params.max_temp_c
    severity: critical
    layer: hardware
    message: "GPU {gpu.index} at {gpu.fake.temp_c} C (limit {params.max_temp_c} C)"
    action: check the fans
"""


@pytest.fixture(scope="module")
def env() -> CelEnvironment:
    return CelEnvironment()


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def fake_result(gpus: list[dict[str, Any]], **facts: Any) -> CheckResult:
    return CheckResult(name="fake", status=Status.OK, facts={"gpus": gpus, **facts})


def evaluate(
    env: CelEnvironment,
    files: list[Path],
    results: list[CheckResult],
    profile: Profile | None = None,
) -> list[Verdict]:
    verdicts: list[Verdict] = evaluate_rules(load_rules(files, env), results, profile, env)
    return verdicts


def by_rule(verdicts: list[Verdict], rule: str) -> list[Verdict]:
    return [v for v in verdicts if v.rule == rule]


# ---- evaluation --------------------------------------------------------------------------


def test_per_gpu_rule_fires_on_the_gpu_it_matches(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(tmp_path, "hot.yaml", HOT_RULES)
    result = fake_result(
        [
            {"index": 0, "temp_c": 91, "pci_bus_id": "0000:19:00.0"},
            {"index": 1, "temp_c": 40, "pci_bus_id": "0000:2a:00.0"},
        ]
    )
    (verdict,) = evaluate(env, [rules], [result])
    assert verdict.status == Status.CRITICAL
    assert verdict.device is not None
    assert (verdict.device.index, verdict.device.pci_bus_id) == (0, "0000:19:00.0")
    assert verdict.message == "GPU 0 at 91 C (limit 85 C)"
    assert verdict.action == "check the fans"
    assert verdict.layer.value == "hardware"


def test_gpus_are_joined_across_checks_by_index(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(
        tmp_path,
        "join.yaml",
        """\
        rules:
          - id: join.hot_and_throttled
            scope: gpu
            when: gpu.fake.temp_c > 80 && gpu.clocks.throttled
            severity: warning
            message: "GPU {gpu.index}: {gpu.fake.temp_c} C and throttled"
        """,
    )
    fake = fake_result([{"index": 0, "temp_c": 90}, {"index": 1, "temp_c": 90}])
    clocks = CheckResult(
        name="clocks",
        status=Status.OK,
        facts={"gpus": [{"index": 1, "throttled": True}, {"index": 0, "throttled": False}]},
    )
    (verdict,) = evaluate(env, [rules], [fake, clocks])
    assert verdict.status == Status.WARNING
    assert verdict.device is not None and verdict.device.index == 1
    assert verdict.message == "GPU 1: 90 C and throttled"


def test_a_quiet_rule_gives_one_ok_verdict(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(tmp_path, "hot.yaml", HOT_RULES)
    (verdict,) = evaluate(env, [rules], [fake_result([{"index": 0, "temp_c": 40}])])
    assert verdict.status == Status.OK
    assert verdict.reason is None


def test_node_scope_rule(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(
        tmp_path,
        "node.yaml",
        """\
        rules:
          - id: fake.too_few
            when: checks.fake.facts.gpu_count < 8
            severity: critical
            message: "only {checks.fake.facts.gpu_count} GPUs"
        """,
    )
    (verdict,) = evaluate(env, [rules], [fake_result([], gpu_count=7)])
    assert (verdict.status, verdict.message, verdict.device) == (
        Status.CRITICAL,
        "only 7 GPUs",
        None,
    )


@pytest.mark.parametrize(
    ("when", "facts"),
    [
        ("gpu.fake.temp_c > 85", {"index": 0}),  # key absent
        ("gpu.fake.temp_c > 85", {"index": 0, "temp_c": None}),  # null
        ("!(gpu.fake.temp_c > 85)", {"index": 0, "temp_c": None}),  # negated
        ("gpu.fake.temp_c", {"index": 0, "temp_c": 90}),  # not a boolean
        ("gpu.fake.temp_c / gpu.fake.zero > 1", {"index": 0, "temp_c": 90, "zero": 0}),
    ],
)
def test_missing_or_bad_input_is_unknown_never_ok(
    tmp_path: Path, env: CelEnvironment, when: str, facts: dict[str, Any]
) -> None:
    rules = write(
        tmp_path,
        "r.yaml",
        f"""\
        rules:
          - id: fake.rule
            scope: gpu
            when: "{when}"
            severity: warning
            message: "GPU {{gpu.index}}"
        """,
    )
    (verdict,) = evaluate(env, [rules], [fake_result([facts])])
    assert verdict.status == Status.UNKNOWN
    assert verdict.reason
    assert verdict.device is not None and verdict.device.index == 0


@pytest.mark.parametrize("when", ["gpu.fake.remap_failure == true", "has(gpu.fake.remap_failure)"])
def test_a_null_fact_never_reads_as_healthy_or_present(
    tmp_path: Path, env: CelEnvironment, when: str
) -> None:
    rules = write(
        tmp_path,
        "r.yaml",
        f"""\
        rules:
          - id: fake.remap
            scope: gpu
            when: "{when}"
            severity: critical
            message: x
        """,
    )
    (verdict,) = evaluate(env, [rules], [fake_result([{"index": 0, "remap_failure": None}])])
    if when.startswith("has("):
        assert verdict.status == Status.OK  # has() on a null is false: not present
    else:
        assert verdict.status == Status.UNKNOWN


def test_requires_a_skipped_check_gives_skipped(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(tmp_path, "hot.yaml", HOT_RULES)
    skipped = CheckResult(name="fake", status=Status.SKIPPED, skip_reason="no NVIDIA driver")
    (verdict,) = evaluate(env, [rules], [skipped])
    assert verdict.status == Status.SKIPPED
    assert verdict.reason is not None and "no NVIDIA driver" in verdict.reason


def test_requires_a_check_that_was_not_run_gives_skipped(
    tmp_path: Path, env: CelEnvironment
) -> None:
    rules = write(tmp_path, "hot.yaml", HOT_RULES)
    (verdict,) = evaluate(env, [rules], [])
    assert verdict.status == Status.SKIPPED


def test_requires_a_check_that_failed_gives_unknown(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(tmp_path, "hot.yaml", HOT_RULES)
    failed = CheckResult(name="fake", status=Status.UNKNOWN, error="timed out")
    (verdict,) = evaluate(env, [rules], [failed])
    assert verdict.status == Status.UNKNOWN
    assert verdict.reason is not None and "timed out" in verdict.reason


def test_a_missing_placeholder_renders_as_a_question_mark(
    tmp_path: Path, env: CelEnvironment
) -> None:
    rules = write(
        tmp_path,
        "r.yaml",
        """\
        rules:
          - id: fake.hot
            scope: gpu
            when: gpu.fake.temp_c > 85
            severity: warning
            message: "GPU {gpu.index} ({gpu.pci_bus_id}) at {gpu.fake.temp_c} C"
        """,
    )
    (verdict,) = evaluate(env, [rules], [fake_result([{"index": 3, "temp_c": 90.0}])])
    assert verdict.message == "GPU 3 (?) at 90 C"


# ---- params: built-in < profile < site ----------------------------------------------------


@pytest.fixture
def builtin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "builtin"
    folder.mkdir()
    monkeypatch.setattr(loader, "builtin_rules_dir", lambda: folder)
    return folder


def test_site_params_override_builtin_without_copying_the_rule(
    tmp_path: Path, env: CelEnvironment, builtin_dir: Path
) -> None:
    builtin = write(builtin_dir, "hot.yaml", HOT_RULES)
    site = write(tmp_path / "site", "site.yaml", "params:\n  max_temp_c: 95\n")
    result = fake_result([{"index": 0, "temp_c": 91}])

    (alone,) = evaluate(env, [builtin], [result])
    (overridden,) = evaluate(env, [builtin, site], [result])
    assert alone.status == Status.CRITICAL
    assert overridden.status == Status.OK
    ruleset = load_rules([builtin, site], env)
    assert [r.id for r in ruleset.rules] == ["fake.hot"]
    assert ruleset.params == {"max_temp_c": 85}
    assert ruleset.site_params == {"max_temp_c": 95}


def test_profile_params_apply_and_site_beats_profile(
    tmp_path: Path, env: CelEnvironment, builtin_dir: Path
) -> None:
    builtin = write(builtin_dir, "hot.yaml", HOT_RULES)
    profile = Profile("h200", "h200.yaml", {"name": "h200"}, {"max_temp_c": 80})
    result = fake_result([{"index": 0, "temp_c": 82}])

    (without,) = evaluate(env, [builtin], [result])
    (with_profile,) = evaluate(env, [builtin], [result], profile)
    assert without.status == Status.OK
    assert with_profile.status == Status.CRITICAL
    assert with_profile.message == "GPU 0 at 82 C (limit 80 C)"

    site = write(tmp_path / "site", "site.yaml", "params:\n  max_temp_c: 90\n")
    (site_wins,) = evaluate(env, [builtin, site], [result], profile)
    assert site_wins.status == Status.OK


def test_a_later_rule_with_the_same_id_replaces_the_earlier(
    tmp_path: Path, env: CelEnvironment
) -> None:
    first = write(tmp_path, "a.yaml", HOT_RULES)
    second = write(
        tmp_path,
        "b.yaml",
        """\
        rules:
          - id: fake.hot
            scope: gpu
            when: gpu.fake.temp_c > 100
            severity: warning
            message: replaced
        """,
    )
    ruleset = load_rules([first, second], env)
    assert len(ruleset.rules) == 1 and ruleset.rules[0].when.text == "gpu.fake.temp_c > 100"


def test_requires_profile_without_one_is_skipped(tmp_path: Path, env: CelEnvironment) -> None:
    rules = write(
        tmp_path,
        "p.yaml",
        """\
        rules:
          - id: profile.power
            requires: [profile]
            when: profile.tdp_w > 0
            severity: warning
            message: x
        """,
    )
    (verdict,) = evaluate(env, [rules], [])
    assert verdict.status == Status.SKIPPED
    profile = Profile("h200", "h200.yaml", {"name": "h200", "tdp_w": 700})
    (verdict,) = evaluate(env, [rules], [], profile)
    assert verdict.status == Status.WARNING


# ---- broken rule files: refused with file:line -------------------------------------------

VALID_RULE = """\
rules:
  - id: ok.rule
    when: "true"
    severity: warning
    message: fine
"""


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        pytest.param(
            "rules:\n  - id: a\n    when: a: b\n    severity: warning\n",
            3,
            "not valid YAML",
            id="bad-yaml",
        ),
        pytest.param(
            VALID_RULE + "    severty: critical\n",
            6,
            "unknown rule key 'severty'",
            id="unknown-rule-key",
        ),
        pytest.param(
            "params: {}\nrule:\n  - id: a\n",
            2,
            "unknown top-level key 'rule'",
            id="unknown-top-level-key",
        ),
        pytest.param(
            "rules:\n  - id: first\n    when: 'true'\n    severity: info\n    message: m\n"
            "  - id: no_when\n    severity: warning\n    message: m\n",
            6,
            "missing 'when'",
            id="missing-when",
        ),
        pytest.param(
            "rules:\n  - id: a\n    scope: gpu\n    when: gpu.temp >\n    severity: warning\n"
            "    message: m\n",
            4,
            "bad CEL expression",
            id="bad-cel",
        ),
        pytest.param(
            "rules:\n  - id: a\n    when: 'true'\n    message: m\n    severity: fatal\n",
            5,
            "severity must be one of",
            id="bad-severity",
        ),
        pytest.param(
            "rules:\n  - id: a\n    when: 'true'\n    severity: warning\n    message: 'x {gpu.}'\n",
            5,
            "bad CEL expression",
            id="bad-placeholder",
        ),
        pytest.param(
            "rules:\n  - id: a\n    scope: rack\n    when: 'true'\n    severity: warning\n"
            "    message: m\n",
            3,
            "scope must be one of ['gpu', 'node']",
            id="bad-scope",
        ),
        pytest.param(
            "rules:\n  - id: a\n    when: 'true'\n    when: 'false'\n    severity: warning\n",
            4,
            "duplicate key 'when'",
            id="duplicate-key",
        ),
        pytest.param(
            "params:\n  lol: &lol [lol, lol]\n  lol2: [*lol, *lol]\n",
            2,
            "anchors/aliases",
            id="anchor",
        ),
    ],
)
def test_broken_rule_files_are_refused_at_file_line(
    tmp_path: Path, env: CelEnvironment, text: str, line: int, words: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as caught:
        load_rules([path], env)
    assert caught.value.path == str(path)
    assert caught.value.line == line, str(caught.value)
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_billion_laughs_is_refused_before_expansion(tmp_path: Path, env: CelEnvironment) -> None:
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[n]
        levels.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    path = tmp_path / "laughs.yaml"
    path.write_text("params:\n" + "\n".join("  " + lv for lv in levels) + "\n")
    with pytest.raises(RuleError) as caught:
        load_rules([path], env)
    assert caught.value.line == 2
    assert "anchors/aliases" in str(caught.value)


def test_a_file_over_1_mb_is_refused(tmp_path: Path, env: CelEnvironment) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(VALID_RULE + "# " + "x" * MAX_YAML_BYTES + "\n")
    assert MAX_YAML_BYTES == 1024 * 1024
    with pytest.raises(RuleError) as caught:
        load_rules([path], env)
    assert "larger than" in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_a_valid_file_loads(tmp_path: Path, env: CelEnvironment) -> None:
    path = write(tmp_path, "ok.yaml", VALID_RULE)
    ruleset = load_rules([path], env)
    assert [(r.id, r.line, r.file) for r in ruleset.rules] == [("ok.rule", 2, str(path))]


@pytest.mark.parametrize(("style", "lines"), [("|", (6,)), (">-", (5, 6))])
def test_bad_cel_in_a_block_scalar_points_into_the_block(
    tmp_path: Path, env: CelEnvironment, style: str, lines: tuple[int, ...]
) -> None:
    path = tmp_path / "block.yaml"
    path.write_text(
        "rules:\n"
        "  - id: a\n"
        "    scope: gpu\n"
        f"    when: {style}\n"
        "      gpu.x > 1 &&\n"
        "      gpu.y >\n"  # line 6: the broken line (a folded block is one CEL line)
        "    severity: warning\n"
        "    message: m\n"
    )
    with pytest.raises(RuleError) as caught:
        load_rules([path], env)
    assert caught.value.line in lines


def test_rules_validate_cli_prints_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(VALID_RULE + "    severty: critical\n")
    good = write(tmp_path, "good.yaml", VALID_RULE)
    failed = subprocess.run(
        [sys.executable, "-m", "sitscheck", "rules", "validate", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert failed.returncode == 3
    assert f"{bad}:6:" in failed.stderr
    passed = subprocess.run(
        [sys.executable, "-m", "sitscheck", "rules", "validate", str(good)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert passed.returncode == 0, passed.stderr
    assert "ok: 1 rules in 1 files" in passed.stdout
