"""The published schemas: schema/facts/<check>.schema.json (each check's facts) and
schema/profile.schema.json (hardware profile files) are what the declarations generate, and
they accept the real outputs and profiles and refuse bad ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from accept_bundles import one_gpu
from infiniband.ib_tree import fact_bundles
from multigpu_bundles import eight_h200
from rule_scenarios import materialise, replay
from sitscheck.cli import app
from sitscheck.contract.registry import discover
from sitscheck.engine.fact_schema import facts_schema, schema_text
from sitscheck.engine.profile_schema import ProfileSchema
from sitscheck.engine.yaml_lines import load_yaml
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
FACTS = REPO / "schema" / "facts"
PROFILE = REPO / "schema" / "profile.schema.json"
CHECKS = {c.name: c for c in discover() if hasattr(c, "layer") and getattr(c, "facts", None)}
IDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"
BANDWIDTH = REPO / "tests" / "bundles" / "h200x1-bandwidth-v1"


def test_one_schema_file_per_check_with_a_facts_model() -> None:
    assert sorted(p.name for p in FACTS.glob("*.json")) == sorted(
        f"{name}.schema.json" for name in CHECKS
    )


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_facts_schema_file_is_current(name: str) -> None:
    assert (FACTS / f"{name}.schema.json").read_text() == schema_text(facts_schema(CHECKS[name])), (
        f"schema/facts/{name}.schema.json is stale: regenerate it with "
        f"`sitscheck schema --facts {name} > schema/facts/{name}.schema.json`"
    )


def test_profile_schema_file_is_current() -> None:
    assert PROFILE.read_text() == schema_text(ProfileSchema.of_checks(discover()).json_schema()), (
        "schema/profile.schema.json is stale: regenerate it with "
        "`sitscheck schema --profile > schema/profile.schema.json`"
    )


def test_the_cli_prints_the_schema_files() -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["schema", "--facts", "nvlink"])
    assert done.exit_code == 0 and done.output == (FACTS / "nvlink.schema.json").read_text()
    done = runner.invoke(app, ["schema", "--profile"])
    assert done.exit_code == 0 and done.output == PROFILE.read_text()
    done = runner.invoke(app, ["schema", "--facts", "nvlinkk"])
    assert done.exit_code == 3 and "no such check: nvlinkk" in done.output


@pytest.fixture(scope="module")
def report_facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each check's facts as the JSON report writes them (what a script reads): the idle
    bundle's, the TensorRT log scenario's for the tensorrt check, the recorded bandwidth
    bundle's for the bandwidth check, an HGX node's eight HCAs for the infiniband check, an
    acceptance run's records for memtest, compute and soak; an 8x H200's multi-GPU phase for the
    multigpu check (and bandwidth's `nccl`)."""
    seed = materialise("seed-worked-example", tmp_path_factory.mktemp("seed") / "bundle")
    hgx = fact_bundles(tmp_path_factory.mktemp("ib"))[0]
    accepted = one_gpu(tmp_path_factory.mktemp("accept"))
    board = eight_h200(tmp_path_factory.mktemp("multigpu"))
    out: dict[str, Any] = {}
    for bundle in (seed, board, BANDWIDTH, IDLE, hgx, accepted):
        report = msgspec.to_builtins(replay(bundle))
        out.update({check["name"]: check["facts"] for check in report["checks"] if check["facts"]})
    return out


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_a_script_validates_the_report_facts_with_the_schema_file(
    name: str, report_facts: dict[str, Any]
) -> None:
    schema = json.loads((FACTS / f"{name}.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    facts = report_facts[name]
    assert list(validator.iter_errors(facts)) == []
    assert not validator.is_valid({**facts, "undeclared": 1})
    gpus = facts.get("gpus") or facts.get("per_gpu")
    key = "gpus" if facts.get("gpus") and isinstance(facts["gpus"][0], dict) else "per_gpu"
    wrong = [{**facts[key][0], "index": "zero"}]
    assert gpus and not validator.is_valid({**facts, key: wrong})


def test_shipped_profiles_validate_with_the_profile_schema_file() -> None:
    validator = jsonschema.Draft202012Validator(json.loads(PROFILE.read_text()))
    profiles = sorted((REPO / "rules" / "profiles").glob("*.yaml"))
    assert len(profiles) >= 6
    for path in profiles:
        data = json.loads(json.dumps(load_yaml(path)))
        assert list(validator.iter_errors(data)) == [], path.name
        assert not validator.is_valid({**data, "tdpw": 700})
        assert not validator.is_valid({**data, "slowdown_c": "eighty-nine"})
