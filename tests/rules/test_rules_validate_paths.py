"""`sitscheck rules validate`: the fact paths rules read and the checks they require.

Expressions are parsed into `engine.syntax` nodes (one parser, whichever CEL engine runs) and
walked with the schema of what the engine gives a rule (engine/fact_schema.py): each path must
be declared by the checks' facts models (or be the engine's own: `gpu.index`,
`checks.<check>.status`, `findings`, the profile's keys).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sitscheck.cli import app
from sitscheck.contract import BaseCheck, Layer
from sitscheck.contract.registry import discover
from sitscheck.engine.fact_paths import expression_problems, source_line
from sitscheck.engine.fact_schema import activation
from sitscheck.engine.profile_schema import ProfileSchema
from sitscheck.engine.syntax import parse
from sitscheck.engine.validation import validate
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
CHECKS = discover()
SCHEMA = activation(CHECKS, ProfileSchema.of_checks(CHECKS).json_schema())
# Shipped rules that read facts no check writes: each is refused until the check writes them.
KNOWN_UNDECLARED: dict[str, set[str]] = {}


def problems(expression: str, scope: str = "gpu") -> list[str]:
    tree = parse(expression)
    return [p.message for p in expression_problems(tree, SCHEMA.names(scope))]


@pytest.mark.parametrize(
    "expression",
    [
        "has(gpu.pcie_link.gen_below_max) && gpu.gpu_telemetry.util_gpu_pct.mean >= 80.0",
        "gpu.index == 0 && gpu.pci_bus_id != '' && gpu.name.startsWith('NVIDIA')",
        "gpu.nvlink.links.exists(l, !l.active && l.link >= 0)",
        "gpu.nvlink.links[0].remote_pci_bus_id == ''",
        "gpu.xid.xids.exists(code, code == '79') || gpu.xid.xids['48'] > 0",
        "gpu.pcie_aer.counters_by_port['0000:00:06.0'].rootport_correctable > 0",
        "checks.topology.facts.pairs.exists(p, has(p.on_nvlink) && !p.on_nvlink)",
        "checks.topology.facts.per_gpu.filter(g, g.in_matrix).map(g, g.nvlink_peers)[0] > 1",
        "size(checks.topology.facts.per_gpu.filter(g, g.index == gpu.index)) == 1",
        "gpu.topology.in_matrix && type(gpu.topology.min_nvlink) == int",
        "checks.driver.status == 'ok' && 'driver.gpu_lost' in checks.driver.findings",
        "checks.driver.metrics['sitscheck.gpu.number'] >= 1.0",
        "findings.exists(f, f.code == 'xid.79' && f.gpu == gpu.index && f.check == 'xid')",
        "has(profile.nvlink) && gpu.nvlink.links_reported < int(profile.nvlink.links)",
        "params.busy_util_pct > 0 && node.gpu_count > 0",
        "(gpu.memory_errors.remap_histogram).none > 0",
        "[gpu.nvlink.links_active].all(n, n > 0) && {'a': gpu.index}.exists(k, k == 'a')",
        "checks.tensorrt.facts.logs.exists(t, t.precision_fallbacks.exists(p, p['from'] == 'X'))",
    ],
)
def test_declared_paths_pass(expression: str) -> None:
    assert problems(expression) == []


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("gpu.nvlink.links_reportd > 0", "did you mean 'links_reported'"),
        ("has(gpu.nvlink.links_reportd)", "gpu.nvlink.links_reportd"),
        ("gpu.nvlinkk.links_reported > 0", "did you mean 'nvlink'"),
        ("gpu.nvlink.links.exists(l, l.actve)", "l.actve: l has no field 'actve'"),
        ("gpu.nvlink.links[0].actve", "gpu.nvlink.links[0].actve"),
        ("gpu.nvlink.links_reported.value > 0", "is an integer, which has no field 'value'"),
        ("gpu.nvlink.links_active.exists(x, x > 0)", "is an integer, not a list or map"),
        ("gpu.pcie_aer.counters_by_port['0000:00:06.0'].correctible > 0", "correctible"),
        ("checks.topology.facts.pairs.exists(p, !p.on_nvlnk)", "did you mean 'on_nvlink'"),
        ("checks.topology.facts.per_gpu.map(g, g.name).exists(n, n.size > 0)", "is a string"),
        ("checks.topology.facts.per_gpu.filter(g, g.in_matrix)[0].nvlink_peerz > 0", "peerz"),
        ("checks.nvlinkk.facts.gpus.size() > 0", "did you mean 'nvlink'"),
        ("checks.driver.fact.gpu_count > 0", "did you mean 'facts'"),
        ("checks.driver.metrics['sitscheck.gpu.cnt'] > 0.0", "sitscheck.gpu.cnt"),
        ("findings.exists(f, f.device == gpu.index)", "f.device"),
        ("profile.nvlink.per_pear > 0", "did you mean 'per_pair'"),
        ("profile.tdpw > 0", "did you mean 'tdp_w'"),
        ("chekcs.driver.status == 'ok'", "chekcs: no such name here"),
        ("[gpu.nvlink.links_activ].all(n, n > 0)", "did you mean 'links_active'"),
    ],
)
def test_undeclared_paths_are_refused(expression: str, words: str) -> None:
    found = problems(expression)
    assert len(found) == 1 and words in found[0], found


def test_gpu_is_not_a_name_in_a_node_rule() -> None:
    assert problems("gpu.index == 0", scope="gpu") == []
    found = problems("gpu.index == 0", scope="node")
    assert len(found) == 1 and found[0].startswith("gpu: no such name here"), found


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("gpu.index >= 0\n  && gpu.nvlink.links_active > 0\n  && gpu.nvlink.linkz > 0", "linkz"),
        ("gpu.nvlink.links_active > 0 &&\n  gpu.nvlink.links[0].actve", "actve"),
        ("gpu.index > 0 &&\n  gpu.nvlink.links_active.exists(x, x > 0)", "exists"),
        ("gpu.index > 0 &&\n  chekcs.driver.status == 'ok'", "chekcs"),
    ],
)
def test_each_path_is_found_where_it_is_in_the_expression(text: str, wrong: str) -> None:
    found = expression_problems(parse(text), SCHEMA.names("gpu"))
    assert [p.at for p in found] == [text.index(wrong)]


def test_a_check_without_a_facts_model_is_not_checked_below_its_name() -> None:
    class LoadAverage(BaseCheck):
        name = "loadavg"
        summary = "load average"
        layer = Layer.RUNTIME

    schema = activation([*CHECKS, LoadAverage()], {"type": "object"})
    assert schema.unmodelled == ("loadavg",)
    for expression in ("checks.loadavg.facts.anything.deeper > 1", "gpu.loadavg.x > 1"):
        tree = parse(expression)
        assert expression_problems(tree, schema.names("gpu")) == []
    tree = parse("checks.loadavgg.facts.x > 1")
    assert len(expression_problems(tree, schema.names("gpu"))) == 1


def test_source_line_follows_a_folded_block_back_to_the_file() -> None:
    lines = [
        "    when: >-",
        "      has(gpu.x)",
        "      && gpu.nvlink.linkz > 0",
        "    severity: info",
    ]
    text = "has(gpu.x) && gpu.nvlink.linkz > 0"  # as YAML folds it
    assert source_line(lines, 2, text, text.index("linkz")) == 3
    assert source_line(lines, 2, text, text.index("has")) == 2
    one = ["    when: gpu.nvlink.linkz > 0"]
    assert source_line(one, 1, "gpu.nvlink.linkz > 0", 11) == 1


# --- rule files ----------------------------------------------------------------------------

RULE = """\
rules:
  - id: site.nvlink_count
    scope: gpu
    requires: [nvlink, loadavgg]
    severity: warning
    guard: has(gpu.nvlink.links_reported)
    when: >-
      gpu.nvlink.links_active > 0
      && gpu.nvlink.links_reportd < 18
    message: >-
      GPU {gpu.index}: {gpu.nvlink.links_active} links up,
      {gpu.nvlink.inactive_linkz} down
"""


def test_a_rule_file_with_undeclared_paths_and_requires_is_refused_with_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(RULE)
    outcome = validate([path])
    assert [(p.line, p.detail.split(": ")[1:3]) for p in outcome.problems] == [
        (4, ["requires 'loadavgg'", "no such check (known"]),
        (9, ["when", "gpu.nvlink.links_reportd"]),
        (12, ["message", "gpu.nvlink.inactive_linkz"]),
    ]
    assert all(p.path == str(path) for p in outcome.problems)
    assert "did you mean 'links_reported'" in outcome.problems[1].detail


def test_the_cli_prints_one_line_per_problem_and_exits_3(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(RULE)
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules:\n  - id: x\n    when: 'true'\n    severity: warning\n    mesage: m\n")
    good = tmp_path / "good.yaml"
    good.write_text(RULE.replace("links_reportd", "links_reported").replace("linkz", "links")
                    .replace(", loadavgg", ""))  # fmt: skip
    done = CliRunner().invoke(app, ["rules", "validate", str(bad), str(broken), str(good)])
    assert done.exit_code == 3
    lines = [line for line in done.output.splitlines() if line.startswith(str(tmp_path))]
    assert [line.split(": ")[0] for line in lines] == [
        f"{bad}:4",
        f"{bad}:9",
        f"{bad}:12",
        f"{broken}:5",
    ]
    passed = CliRunner().invoke(app, ["rules", "validate", str(good)])
    assert passed.exit_code == 0, passed.output
    assert "ok: 1 rules in 1 files" in passed.output


def test_the_shipped_rule_files_read_only_declared_facts() -> None:
    outcome = validate([])
    assert outcome.rules > 30 and outcome.rule_files >= 5 and outcome.profiles >= 6
    undeclared: dict[str, set[str]] = {}
    for problem in outcome.problems:
        rule = problem.detail.split(": ")[0].removeprefix("rule ")
        undeclared.setdefault(rule, set()).add(problem.detail.split(": ")[2])
    assert undeclared == KNOWN_UNDECLARED
