"""Hardware profile files against the profile schema: the core keys (name, match, params) and
the keys checks declare (`profile_keys`). `rules validate` refuses an unknown key or a wrong
type naming file and line; a run refuses a site profile the same way; `rules list` lists the
profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sitscheck.cli import app
from sitscheck.contract import BaseCheck, Layer, ProfileKey
from sitscheck.contract.registry import discover
from sitscheck.engine.loader import load_profiles
from sitscheck.engine.profile_schema import ProfileSchema
from sitscheck.engine.validation import validate
from sitscheck.engine.yaml_lines import load_yaml
from sitscheck.errors import ConfigError, RuleError
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "rules" / "profiles").glob("*.yaml"))
SCHEMA = ProfileSchema.of_checks(discover())
H200 = (REPO / "rules" / "profiles" / "h200-sxm.yaml").read_text()
IDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"


def write(folder: Path, text: str, name: str = "site.yaml") -> Path:
    path = folder / "profiles" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(path: Path) -> list[tuple[int | None, str]]:
    return [(p.line, p.detail) for p in SCHEMA.problems(str(path), load_yaml(path))]


def test_the_shipped_profiles_pass() -> None:
    assert len(SHIPPED) >= 6
    for path in SHIPPED:
        assert found(path) == [], path.name
    outcome = validate(SHIPPED)
    assert outcome.problems == [] and outcome.profiles == len(SHIPPED)


def _owners(keys: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Who declared each key of a `ProfileSchema.keys` tree, by its dotted name."""
    out: dict[str, str] = {}
    for name, spec in keys.items():
        out[prefix + name] = spec.owner
        out.update(_owners(spec.children, f"{prefix}{name}."))
    return out


def test_the_checks_declare_the_keys_the_built_in_rules_read() -> None:
    owners = _owners(SCHEMA.keys)
    assert owners["tdp_w"] == owners["slowdown_c"] == "gpu_telemetry"
    assert owners["pcie.width"] == "pcie_link" and owners["nvlink.links"] == "nvlink"
    assert owners["nvlink.per_pair"] == owners["gpus_per_board"] == "topology"
    assert owners["name"] == owners["match.names"] == owners["params"] == "core"


@pytest.mark.parametrize(
    ("edit", "line", "words"),
    [
        (("tdp_w: 700", "tdpw: 700"), 16, "unknown profile key 'tdpw' (did you mean 'tdp_w'?)"),
        (
            ("slowdown_c: 89", 'slowdown_c: "eighty-nine"'),
            27,
            "profile key 'slowdown_c' must be a number, not 'eighty-nine'",
        ),
        (
            ("per_pair: 18", "per_pear: 18"),
            19,
            "unknown profile key 'nvlink.per_pear' (did you mean 'nvlink.per_pair'?)",
        ),
        (("gpus_per_board: 8", "gpus_per_board: 8.5"), 15, "'gpus_per_board' must be an integer"),
        (("tdp_w: 700", "tdp_w: true"), 16, "'tdp_w' must be a number, not True"),
        (("  gen: 5\n  width: 16", "  16"), 25, "'pcie' must be a mapping, not 16"),
        (("nic_pairing: [PIX, PXB]", "nic_pairing: PIX"), 32, "must be a list of strings"),
        (("nic_pairing: [PIX, PXB]", "nic_pairing: [PIX, 3]"), 32, "'nic_pairing[1]' must be a"),
        (
            ("link_gbs_per_direction: 25", "link_gbs_per_direction: fast"),
            23,
            "profile key 'nvlink.link_gbs_per_direction' must be a number, not 'fast'",
        ),
        (("name: h200-sxm\n", ""), 11, "a profile needs 'name'"),
    ],
)
def test_an_unknown_key_or_a_wrong_type_is_refused_on_its_line(
    tmp_path: Path, edit: tuple[str, str], line: int, words: str
) -> None:
    assert edit[0] in H200
    path = write(tmp_path, H200.replace(edit[0], edit[1]))
    problems = found(path)
    assert len(problems) == 1 and problems[0][0] == line and words in problems[0][1], problems


def test_null_leaves_a_key_unset_and_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "name: h200-sxm\nnvlink:\nslowdown_c: ~\n")
    assert found(path) == []


def test_rules_validate_refuses_a_profile_file_with_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, H200.replace("tdp_w: 700", "tdpw: 700"))
    done = CliRunner().invoke(app, ["rules", "validate", str(path)])
    assert done.exit_code == 3
    assert f"{path}:16: unknown profile key 'tdpw'" in done.output
    folder = CliRunner().invoke(app, ["rules", "validate", str(tmp_path)])  # a folder: its profiles
    assert folder.exit_code == 3 and f"{path}:16:" in folder.output


def test_a_run_refuses_a_site_profile_with_a_typo(tmp_path: Path) -> None:
    path = write(tmp_path, "name: h200-sxm\nslowdown_c: eighty-nine\n")
    done = CliRunner().invoke(app, ["run", "--from", str(IDLE), "--rules", str(tmp_path)])
    assert done.exit_code == 3
    errors = [line for line in done.output.splitlines() if "slowdown_c" in line]
    assert errors == [
        f"sitscheck: {path}:2: profile key 'slowdown_c' must be a number, not 'eighty-nine'"
    ]
    with pytest.raises(RuleError):
        load_profiles([tmp_path])


def test_a_valid_site_profile_overrides_and_is_listed(tmp_path: Path) -> None:
    path = write(tmp_path, "name: h200-sxm\nslowdown_c: 85\n")
    profiles = load_profiles([tmp_path])
    assert profiles["h200-sxm"].data["slowdown_c"] == 85 and profiles["h200-sxm"].file == str(path)
    done = CliRunner().invoke(app, ["rules", "list", "--rules", str(tmp_path)])
    assert done.exit_code == 0, done.output
    rows = {line.split()[0]: line for line in done.output.splitlines() if line.strip()}
    assert str(path) in rows["h200-sxm"] and "H200(?! NVL)" in rows["h200-sxm"]
    assert "2335" in rows["h200-sxm"]
    assert "rules/profiles/l40s.yaml" in rows["l40s"] and "L40S" in rows["l40s"]


def test_a_plugin_declares_its_own_profile_keys() -> None:
    class LoadAverage(BaseCheck):
        name = "loadavg"
        summary = "load average"
        layer = Layer.RUNTIME
        profile_keys = (ProfileKey("loadavg.max", "number", "highest load average"),)

    schema = ProfileSchema.of_checks([*discover(), LoadAverage()])
    assert schema.problems("p.yaml", {"name": "x", "loadavg": {"max": 4}}) == []
    assert len(SCHEMA.problems("p.yaml", {"name": "x", "loadavg": {"max": 4}})) == 1


@pytest.mark.parametrize(
    "keys",
    [
        [("a", ProfileKey("x", "integer", "")), ("b", ProfileKey("x", "string", ""))],
        [("a", ProfileKey("x", "integer", "")), ("b", ProfileKey("x.y", "integer", ""))],
        [("a", ProfileKey("x", "float", ""))],
    ],
)
def test_conflicting_or_unknown_declarations_are_refused(
    keys: list[tuple[str, ProfileKey]],
) -> None:
    with pytest.raises(ConfigError):
        ProfileSchema(keys)
