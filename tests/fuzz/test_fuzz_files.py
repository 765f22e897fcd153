"""Hostile files a run loads: rule files (structure, nesting, size, expressions), the site
config, the daemon state file, and a bundle's nvml.json read by every GPU check."""

from __future__ import annotations

import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzz_targets import BUNDLE, CEL, rule_file, site_config, state_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitscheck.config import RunConfig
from sitscheck.contract.registry import discover, select
from sitscheck.contract.runner import run_checks
from sitscheck.daemon.state import DaemonState, load_state, save_state
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import load_rules
from sitscheck.errors import ConfigError, RuleError
from sitscheck.models import CheckResult
from sitscheck.site_config import build_config, load_site_config
from sitscheck.sources.replay import ReplaySources

EXAMPLES = int(os.environ.get("SITSCHECK_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=3000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SITSCHECK = Path(sys.executable).with_name("sitscheck")
TEN_GB = 10 * 1024**3

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=16)
)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def json_values(leaf: Any) -> Any:
    return st.recursive(
        leaf,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    )


json_value = json_values(json_leaf)
# Rule params and values reach CEL, whose ints are 64-bit: larger ones are a known bug, pinned by
# test_fuzz_bundles.py::test_a_counter_past_int64_*; the rule fuzz stays within int64.
rule_value = json_values(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=True) | st.text(max_size=16)
)


@pytest.fixture(scope="module")
def replayed() -> list[CheckResult]:
    """Real check results (the recorded bundle) for fuzzed rules to be evaluated against."""
    checks = select(discover(), [], [])
    results: list[CheckResult] = run_checks(checks, ReplaySources(BUNDLE), RunConfig())
    return results


# ---- rule files -------------------------------------------------------------------------------

EXPRESSION_PIECES = [
    "checks.driver.facts.gpu_count",
    "checks.xid.status",
    "params.limit",
    "gpu.index",
    "gpu.pcie_link.width_current",
    "profile.nvlink.per_pair",
    "node.expect_gpus",
    "findings",
    "has(checks.xid.facts.events)",
    "size(findings)",
    "findings.exists(f, f.severity == 'critical')",
    "1",
    "2.5",
    "-3",
    "'text'",
    "true",
    "null",
    "[1, 2]",
    "{'a': 1}",
    " < ",
    " == ",
    " + ",
    " / ",
    " && ",
    " || ",
    "!",
    " ? ",
    " : ",
    "(",
    ")",
    ".",
    "[",
    "]",
    ",",
    "\\",
    "\x00",
]
expression = st.lists(st.sampled_from(EXPRESSION_PIECES), min_size=1, max_size=10).map("".join)
rule = st.fixed_dictionaries(
    {
        "id": st.text(max_size=24),
        "when": expression,
        "severity": st.sampled_from(["info", "warning", "critical", "loud", 3, None]),
        "message": st.text(max_size=30) | expression.map(lambda e: "value {" + e + "}"),
    },
    optional={
        "scope": st.sampled_from(["node", "gpu", "rack", 1]),
        "guard": expression,
        "requires": st.lists(st.sampled_from(["driver", "xid", "profile", "nosuch"]), max_size=3),
        "layer": st.sampled_from(["hardware", "driver", "runtime", "firmware"]),
        "explains": st.lists(st.text(max_size=10), max_size=2),
        "action": rule_value,
        "extra": rule_value,
    },
)
rule_document = st.fixed_dictionaries(
    {"rules": st.lists(rule, max_size=4) | rule_value},
    optional={"params": st.dictionaries(st.text(max_size=10), rule_value, max_size=4) | rule_value},
)


@FUZZ
@given(document=rule_document)
def test_any_rule_document_loads_or_is_refused_naming_file_and_line_and_evaluates(
    document: dict[str, Any], replayed: list[CheckResult], tmp_path: Path
) -> None:
    text = yaml.safe_dump(document, allow_unicode=True).encode("utf-8")
    rule_file(text)  # loads or refuses with the file named
    path = tmp_path / "site.yaml"
    path.write_bytes(text)
    try:
        ruleset = load_rules([path], CEL)
    except RuleError:
        return
    for verdict in evaluate_rules(ruleset, replayed, None, CEL):  # never raises
        assert verdict.status.value in ("ok", "warning", "critical", "unknown", "skipped")


def test_billion_laughs_in_the_site_config_is_refused_at_once(tmp_path: Path) -> None:
    """(Rule files refuse anchors outright: tests/foundation; the site config's safe_load
    shares the aliased lists, so the cost is in validation, which stops at the first level.)"""
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        laughs += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
    path = tmp_path / "config.yaml"
    path.write_text(laughs + "checks: *i\n")
    began = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        build_config(load_site_config(path), {}, str(path))
    assert time.monotonic() - began < 2.0
    assert str(path) in str(caught.value)


def test_deeply_nested_rule_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("rules: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(RuleError) as caught:
        load_rules([path], CEL)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("text", ["=\n", "rules: !!python/name:os.system\n"])
def test_an_unknown_yaml_tag_is_refused_naming_file_and_line(text: str, tmp_path: Path) -> None:
    path = tmp_path / "tagged.yaml"
    path.write_text(text)
    with pytest.raises(RuleError) as caught:
        load_rules([path], CEL)
    assert str(caught.value).startswith(f"{path}:1")


def limited(limit_bytes: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


@pytest.fixture
def sparse_10gb(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(TEN_GB)  # sparse: no 10 GB is ever written
    yield path
    path.unlink()


@pytest.mark.parametrize("kind", ["rule-file", "site-config"])
def test_ten_gigabyte_rule_or_config_file_is_refused_in_bounded_memory(
    kind: str, sparse_10gb: Path, tmp_path: Path
) -> None:
    if kind == "rule-file":
        argv = [str(SITSCHECK), "rules", "validate", str(sparse_10gb)]
    else:
        argv = [str(SITSCHECK), "run", "--from", str(BUNDLE), "--config", str(sparse_10gb)]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        preexec_fn=limited(1024**3),
        check=False,
    )
    assert done.returncode == 3
    assert "internal error" not in done.stderr and "larger than" in done.stderr, done.stderr


def nested_all(depth: int) -> str:
    expression = "1 == 1"
    for level in range(depth):
        expression = f"[0,1,2,3,4,5,6,7,8,9].all(v{level}, {expression})"
    return expression  # 10 ** depth evaluations in under 300 characters


def test_pathological_expression_is_refused_or_bounded(tmp_path: Path) -> None:
    rules = tmp_path / "slow.yaml"
    rules.write_text(
        yaml.safe_dump(
            {
                "rules": [
                    {
                        "id": "site.slow",
                        "when": nested_all(9),
                        "severity": "warning",
                        "message": "m",
                    }
                ]
            }
        )
    )
    argv = [
        str(SITSCHECK),
        "run",
        "--from",
        str(BUNDLE),
        "--check",
        "driver",
        "--rules",
        str(rules),
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=8, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("the run was still evaluating the rule after 8s")
    assert done.returncode in (0, 1, 2, 3)
    assert "Traceback" not in done.stderr


def test_nested_expression_cost_grows_tenfold_per_level() -> None:
    """Control for the test above: evaluation really is exponential in the nesting (measured
    with celpy directly: sitscheck refuses the deeper expressions at load)."""
    import celpy
    from celpy.adapter import json_to_cel

    env = celpy.Environment()
    times = []
    for depth in (1, 2, 3):
        program = env.program(env.compile(nested_all(depth)))
        began = time.perf_counter()
        program.evaluate(json_to_cel({}))
        times.append(time.perf_counter() - began)
    assert times[2] > 5 * times[1] > 0
    with pytest.raises(RuleError, match="comprehensions"):
        CEL.compile(nested_all(3), "x.yaml", 1)


# ---- the site config --------------------------------------------------------------------------


def test_site_config_not_utf8_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"expect_gpus: 8\n# \xff\xfe latin-1 comment: caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load_site_config(path)
    assert str(path) in str(caught.value)


@FUZZ
@given(document=st.dictionaries(st.sampled_from([*RunConfig.__struct_fields__, "x"]), json_value))
def test_any_site_config_builds_or_is_refused_naming_it(document: dict[str, Any]) -> None:
    text = yaml.safe_dump(document, allow_unicode=True).encode("utf-8")
    site_config(text)
    try:
        build_config(document, {}, "config.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("config.yaml: ")


# ---- the daemon state file --------------------------------------------------------------------

ITEM_KEYS = ["kind", "key", "code", "check", "device", "status", "message", "event", "since"]
state_document = st.fixed_dictionaries(
    {"format": st.just("sitscheck-state"), "version": st.just(1)},
    optional={
        "items": st.lists(st.dictionaries(st.sampled_from(ITEM_KEYS), json_value), max_size=3)
        | json_value,
        "counters": st.lists(json_value, max_size=3),
        "kernel_cursor": json_value,
        "last_run": json_value,
        "boot_id": json_value,
        "host": json_value,
    },
)


@FUZZ
@given(document=state_document)
def test_any_state_document_is_used_or_moved_aside_and_round_trips(
    document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    data = json.dumps(document).encode("utf-8")
    state_file(data)
    folder = tmp_path_factory.mktemp("state")
    (folder / "state.json").write_bytes(data)
    loaded = load_state(folder)
    if loaded.state is not None:
        save_state(folder, loaded.state)
        again = load_state(folder).state
        assert isinstance(again, DaemonState) and again == loaded.state


# ---- a bundle's nvml.json, read by every GPU check --------------------------------------------

RECORDING = json.loads((BUNDLE / "nvml.json").read_text())


@pytest.fixture(scope="module")
def bundle_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("nvml") / "bundle"
    shutil.copytree(BUNDLE, target)
    return target


def replay_with(bundle: Path, recording: Any) -> dict[str, CheckResult]:
    (bundle / "nvml.json").write_text(json.dumps(recording))
    checks = select(discover(), [], [])
    return {r.name: r for r in run_checks(checks, ReplaySources(bundle), RunConfig())}


@st.composite
def damaged_recording(draw: Any) -> Any:
    """The recorded nvml.json with a few values anywhere in it replaced by any JSON value."""
    recording = copy.deepcopy(RECORDING)
    for _ in range(draw(st.integers(1, 4))):
        node: Any = recording
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.booleans()):
                node = child
                continue
            node[key] = draw(json_value)
            break
    return recording


@settings(
    max_examples=max(EXAMPLES // 3, 20),
    deadline=5000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(recording=damaged_recording())
def test_a_damaged_nvml_json_never_escapes_the_runner(recording: Any, bundle_copy: Path) -> None:
    results = replay_with(bundle_copy, recording)
    assert len(results) == len(discover())  # every installed check, none lost
    for result in results.values():
        assert result.status.value in ("ok", "warning", "critical", "unknown", "skipped")


def test_a_malformed_nvml_json_is_named_and_costs_no_kernel_log_result(bundle_copy: Path) -> None:
    recording = copy.deepcopy(RECORDING)
    recording["gpus"][1] = 7
    results = replay_with(bundle_copy, recording)
    for result in results.values():
        assert "internal error" not in (result.error or ""), (result.name, result.error)
    named = results["driver"].error or " ".join(results["driver"].not_judged)
    assert "nvml.json: gpus.1" in named, named
    intact = replay_with(bundle_copy, RECORDING)
    for name in ("xid", "pcie_aer"):
        assert results[name].status == intact[name].status
