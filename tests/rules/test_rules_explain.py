"""`sitscheck explain CODE` (explain.py over the code tables the checks declare, the Xid
catalog's among them, and the rule set), and those tables against what the checks raise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rule_scenarios import TESTS
from sitscheck.cli import app
from sitscheck.contract.declarations import CodeSpec, declaration_of
from sitscheck.contract.registry import discover
from sitscheck.engine.loader import load_rules, rule_files
from sitscheck.errors import ConfigError
from sitscheck.report.explain import Explanation
from sitscheck.report.explain import explain as explain_with
from sitscheck.report.explain import explain_text as explain_text_with
from typer.testing import CliRunner

RULESET = load_rules(rule_files([]))
FOUND = discover()
# every finding code a check declares, the Xid catalog's numbered codes aside
DECLARED: dict[str, CodeSpec] = {
    spec.code: spec
    for check in FOUND
    if check.name != "xid"
    for spec in declaration_of(check).codes
}


def explain(code: str, ruleset: object) -> Explanation:
    return explain_with(code, ruleset, FOUND)  # type: ignore[arg-type]


def explain_text(code: str, ruleset: object) -> str:
    return explain_text_with(code, ruleset, FOUND)  # type: ignore[arg-type]


def normalise(code: str) -> str:
    for check in FOUND:
        named = declaration_of(check).codes.normalise(code)
        if named is not None:
            return named
    return code.strip().lower()


CHECKS = TESTS.parent / "checks"
_LITERAL = re.compile(r"""\bcode=(f?)"([^"]+)\"""")
_QUOTED = re.compile(r'"([a-z_]+\.[a-z0-9_]+)"')
# Every code template the checks build with an f-string, and what it expands to.
TEMPLATES = {
    "driver.{gpu.state}": {
        "driver.gpu_lost",
        "driver.reset_required",
        "driver.error",
        "driver.timeout",
        "driver.no_permission",
        "driver.not_supported",
    },
    "pcie_aer.uncorrected_{severity}": {
        "pcie_aer.uncorrected_fatal",
        "pcie_aer.uncorrected_nonfatal",
    },
    "pcie_aer.counter_{kind}": {"pcie_aer.counter_fatal", "pcie_aer.counter_nonfatal"},
    "{group.kind}.{group.code}": set(),  # xid.N / sxid.N: the Xid catalog's
    "{info.kind}.{info.code}": set(),  # the Xid catalog served as a code table
}


def emitted_codes() -> tuple[set[str], set[str]]:
    """`code="..."` literals and templates in the checks' code, and any other string literal
    that is a declared code, outside the code tables themselves (a judge passing its codes
    positionally, as infiniband's does)."""
    literals: set[str] = set()
    templates: set[str] = set()
    for path in sorted(CHECKS.rglob("*.py")):
        text = path.read_text()
        for is_f, code in _LITERAL.findall(text):
            (templates if is_f else literals).add(code)
        if path.name != "codes.py":
            literals.update(c for c in _QUOTED.findall(text) if c in DECLARED)
    return literals, templates


def test_every_code_the_checks_raise_is_documented() -> None:
    literals, templates = emitted_codes()
    assert literals, "no code= found: the scan is broken"
    assert templates == set(TEMPLATES), "a check builds a new code template: document it"
    expected = literals.union(*TEMPLATES.values())
    assert expected - set(DECLARED) == set()
    assert set(DECLARED) - expected == set(), "documented codes no check raises"


def test_every_code_has_a_meaning_an_action_and_its_checks_evidence() -> None:
    by_name = {check.name: check for check in FOUND}
    for code, spec in DECLARED.items():
        assert spec.meaning and spec.action, code
        check = by_name[code.split(".", 1)[0]]
        assert declaration_of(check).evidence.summary, code


def test_the_driver_states_in_the_table_are_the_sources_states() -> None:
    from typing import get_args

    from sitscheck.sources.base import DriverState
    from sitscheck.sources.nvml import ReadingState

    # a state in which no module serves the GPUs has its code (`present` serves them;
    # `unknown` says nothing, and the check stays UNKNOWN)
    stated = {f"driver.{s}" for s in get_args(DriverState) if s not in ("present", "unknown")}
    assert stated <= set(DECLARED)
    assert TEMPLATES["driver.{gpu.state}"] == {
        f"driver.{s}" for s in get_args(ReadingState) if s != "ok"
    }


@pytest.mark.parametrize(
    ("given", "wanted"),
    [
        ("xid.79", "xid.79"),
        ("Xid 79", "xid.79"),
        ("XID79", "xid.79"),
        ("79", "xid.79"),
        ("SXid 12028", "sxid.12028"),
        ("sxid.012028", "sxid.12028"),
        ("pcie_link.width_degraded", "pcie_link.width_degraded"),
    ],
)
def test_codes_are_normalised(given: str, wanted: str) -> None:
    assert normalise(given) == wanted


def test_a_rule_says_what_it_means_reads_and_asks() -> None:
    text = explain_text("quick_check.fell_off_bus_pcie", RULESET)
    assert text.startswith("quick_check.fell_off_bus_pcie: rule (rules/quick-check.yaml:")
    for label in ("meaning:", "layer:", "severity:", "source:", "evidence:", "reads:", "action:"):
        assert f"  {label}" in text, label
    assert "hardware" in text and "critical" in text
    assert "gpu.xid.fallen_off_bus" in text and "gpu.pcie_aer.events.fatal" in text
    assert "explains:" in text and "xid.79" in text
    assert "power-cycle" in text


def test_a_rules_params_show_their_values_and_a_site_override(tmp_path: Path) -> None:
    assert "temp_dfs_c = 83" in explain_text("quick_check.thermal_dfs", RULESET)
    site = tmp_path / "site.yaml"
    site.write_text("params:\n  temp_dfs_c: 86\n")
    ruleset = load_rules(rule_files([site]))
    assert "temp_dfs_c = 86 (site file)" in explain_text("quick_check.thermal_dfs", ruleset)


def test_a_symptom_names_the_rules_that_explain_it() -> None:
    text = explain_text("pcie_aer.corrected_rate", RULESET)
    assert "explained by:" in text
    assert "quick_check.degraded_link_aer" in text and "quick_check.pcie_signal_integrity" in text


def test_an_xid_comes_from_the_catalog() -> None:
    text = explain_text("Xid 79", RULESET)
    assert text.startswith("xid.79: Xid 79 (GPU_HAS_FALLEN_OFF_THE_BUS)")
    assert "fallen off the bus" in text
    assert "critical" in text and "driver" in text
    assert "explained by:  quick_check.fell_off_bus_pcie" in text
    assert "reboot" in text
    assert explain("xid.48", RULESET).code == "xid.48"
    assert "quick_check.memory_dbe_confirmed" in explain_text("xid.48", RULESET)
    unknown = explain_text("xid.9999", RULESET)
    assert "not in this catalog" in unknown


def test_an_sxid_comes_from_the_catalog() -> None:
    explanation = explain("sxid.12028", RULESET)
    assert explanation.code == "sxid.12028"
    assert "NVSwitch" in explain_text("sxid.12028", RULESET)


def test_a_finding_code_comes_from_the_codes_table() -> None:
    text = explain_text("pcie_link.width_degraded", RULESET)
    assert text.startswith("pcie_link.width_degraded: finding of the pcie_link check")
    assert "70 %" in text and "warning" in text and "hardware" in text
    assert "explained by:  quick_check.degraded_link_aer" in text
    assert "reseat" in text


def test_every_rule_and_every_code_explains() -> None:
    for rule in RULESET.rules:
        text = explain_text(rule.id, RULESET)
        assert "  action:" in text and "  source:" in text, rule.id
    for code in DECLARED:
        assert "  action:" in explain_text(code, RULESET), code


def test_an_unknown_code_is_an_error_with_close_matches() -> None:
    with pytest.raises(ConfigError, match=r"did you mean pcie_link\.width_degraded"):
        explain("pcie_link.width_degrade", RULESET)
    with pytest.raises(ConfigError, match="no rule, Xid or finding code named 'nonsense'"):
        explain("nonsense", RULESET)


def test_the_cli_command() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["explain", "quick_check.nvlink_down_fabric"])
    assert result.exit_code == 0, result.output
    assert "fabric manager" in result.output
    result = runner.invoke(app, ["explain", "no.such_code"])
    assert result.exit_code == 3
    assert "no rule, Xid or finding code" in result.output


def test_the_cli_reads_extra_rule_files(tmp_path: Path) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text(
        "rules:\n"
        "  - id: site.custom\n"
        "    when: 'true'\n"
        "    severity: info\n"
        "    message: a site rule\n"
        "    description: a rule a site added\n"
        "    source: the site's runbook\n"
    )
    result = CliRunner().invoke(app, ["explain", "site.custom", "--rules", str(extra)])
    assert result.exit_code == 0, result.output
    assert "a rule a site added" in result.output and "the site's runbook" in result.output


def test_rules_list_shows_every_rule_with_its_source() -> None:
    result = CliRunner().invoke(app, ["rules", "list"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    for rule in RULESET.rules:
        if rule.id.startswith("quick_check."):
            assert rule.id in rows
            assert rows[rule.id].rstrip().endswith((rule.source or "").strip()[-20:])
