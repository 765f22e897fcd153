"""A value that does not fit its model (msgspec's ValidationError) is one line in the
project's words: the file and line where the site file's marks are known, the key path, what
is wrong, never the value (`sitscheck.invalid`, `sitscheck.structs.convert`). One test per
shape of msgspec's message, then each place that reads outside data: the site config, a
check's config section, the daemon's state file, a bundle's nvml.json, the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec
import pytest
from sitscheck.checks.infiniband.facts import Settings
from sitscheck.cli import app
from sitscheck.config import run_config
from sitscheck.contract.registry import discover, select
from sitscheck.contract.settings import check_settings
from sitscheck.daemon.state import _problem as state_problem
from sitscheck.errors import ConfigError
from sitscheck.site_config import build_config, load_site_config
from sitscheck.sources.snapshot_schema import snapshot_problem
from sitscheck.structs import Invalid, convert, json_schema
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"
SECRET = "s3cr3t-token"


class Port(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(max_length=8)]
    speed: Annotated[int, msgspec.Meta(ge=1)] | None = None
    mode: Literal["ib", "eth"] = "ib"


class Node(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    ports: list[Port] = msgspec.field(default_factory=list)
    counters: dict[str, Annotated[int, msgspec.Meta(ge=0)]] = msgspec.field(default_factory=dict)
    groups: dict[str, list[Port]] = msgspec.field(default_factory=dict)
    tags: Annotated[list[str], msgspec.Meta(min_length=1)] = msgspec.field(
        default_factory=lambda: ["x"]
    )

    def __post_init__(self) -> None:
        if "bad" in self.tags:
            raise ValueError("tags: 'bad' is a reserved tag")


def invalid(data: object, model: type = Node, strict: bool = True) -> Invalid:
    with pytest.raises(Invalid) as caught:
        convert(data, model, strict=strict)
    return caught.value


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ports": [{"name": 3}]}, "ports.0.name: expected a string, got an integer"),
        ({"ports": "eth0"}, "ports: expected a list, got a string"),
        ({"ports": [{"name": "a", "speed": 1.5}]},
         "ports.0.speed: expected an integer or null, got a number"),
        ({"ports": [{"name": "a", "speed": 0}]}, "ports.0.speed: must be at least 1"),
        ({"ports": [{"name": "a-long-name"}]}, "ports.0.name: must have at most 8 characters"),
        ({"tags": []}, "tags: must have at least 1 item"),
        ({"ports": [{}]}, "ports.0.name: required, not given"),
        ({"prots": []}, "prots: unknown key (did you mean 'ports'?)"),
        ({"ports": [{"name": "a", "mode": "fddi"}]}, "ports.0.mode: must be one of 'ib', 'eth'"),
        ({"counters": {"rx": 1, "tx": -2}}, "counters.tx: must be at least 0"),
        ({"groups": {"a": [], "b": [{"name": 1}]}},
         "groups.b.0.name: expected a string, got an integer"),
        ({"tags": ["bad"]}, "tags: 'bad' is a reserved tag"),
        ({"counters": {1: 1}}, "counters: a key: expected a string, got an integer"),
        ([], "expected a mapping, got a list"),
    ],
)  # fmt: skip
def test_each_shape_of_msgspecs_message_reads_as_key_path_and_words(
    data: object, message: str
) -> None:
    assert str(invalid(data)) == message


def test_the_value_is_never_quoted() -> None:
    """msgspec quotes a literal it refuses ("Invalid enum value 's3cr3t-token'"): a config
    value may be a credential."""
    error = invalid({"ports": [{"name": "a", "mode": SECRET}]})
    assert SECRET not in str(error) and error.where == "ports.0.mode"


def test_a_number_as_text_is_read_only_where_asked() -> None:
    assert convert({"ports": [{"name": "a", "speed": "8"}]}, Node, strict=False).ports[0].speed == 8
    assert str(invalid({"ports": [{"name": "a", "speed": "8"}]})).endswith("got a string")


def test_a_schema_has_its_model_at_the_root() -> None:
    schema = json_schema(Node)
    assert schema["title"] == "Node" and "ports" in schema["properties"]
    assert schema["$defs"]["Port"]["additionalProperties"] is False


# ---- the site config ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("expect_gpus: 8\ncheck_timeout_s: -1\n", ":2: check_timeout_s", "must be greater than 0"),
        ("check_timeout_s: .nan\n", ":1: check_timeout_s", "must be a finite number"),
        ("run_timeout_s: 1e300\n", ":1: run_timeout_s", "must be at most 86400"),
        ("# site\n\nchekcs: [xid]\n", ":3: chekcs", "unknown key (did you mean 'checks'?)"),
        ("checks:\n  - xid\n  - 7\n", ":3: checks.1", "expected a string, got an integer"),
        ("check_config:\n  xid: {}\n  nvlink: [1]\n", ":3: check_config.nvlink",
         "expected a mapping, got a list"),
        ("rules_dirs: [/etc/r, 3]\n", ":1: rules_dirs.1", "expected a path (a string)"),
        ("expect_gpus: eight\n", ":1: expect_gpus", "expected an integer or null, got a string"),
    ],
)  # fmt: skip
def test_a_site_file_mistake_names_its_file_line_and_key(
    tmp_path: Path, text: str, where: str, what: str
) -> None:
    site = tmp_path / "config.yaml"
    site.write_text(text)
    with pytest.raises(ConfigError) as caught:
        build_config(load_site_config(site), {}, str(site))
    assert str(caught.value) == f"{site}{where}: {what}"


def test_a_mistake_in_an_option_names_no_line_of_the_site_file(tmp_path: Path) -> None:
    site = tmp_path / "config.yaml"
    site.write_text("expect_gpus: 8\ncheck_timeout_s: 5\n")
    with pytest.raises(ConfigError) as caught:
        build_config(load_site_config(site), {"check_timeout_s": 1e9}, str(site))
    assert str(caught.value) == f"{site}: check_timeout_s: must be at most 86400"


def test_a_duplicate_key_in_the_site_file_is_refused_naming_its_line(tmp_path: Path) -> None:
    """safe_load kept the last of two `checks:` silently: the site meant one of them."""
    site = tmp_path / "config.yaml"
    site.write_text("checks: [xid]\nexpect_gpus: 8\nchecks: [nvlink]\n")
    with pytest.raises(ConfigError) as caught:
        load_site_config(site)
    assert str(caught.value) == f"{site}:3: duplicate key 'checks'"


def test_numbers_written_as_text_and_paths_are_read_as_before() -> None:
    config = run_config({"expect_gpus": "8", "check_timeout_s": 5, "rules_dirs": ["/r"]})
    assert (config.expect_gpus, config.check_timeout_s) == (8, 5.0)
    assert config.rules_dirs == [Path("/r")] and config.state_dir == Path("/var/lib/sitscheck")


def test_the_otlp_sections_mistakes_stay_warnings_named_by_key() -> None:
    otlp = run_config({"otlp": {"spool_max_age_s": float("inf"), "timeout_s": "soon"}}).otlp
    assert otlp.ignored == [
        "config otlp.spool_max_age_s: must be a finite number",
        "config otlp.timeout_s: expected a number or null, got a string",
    ]
    assert otlp.spool_max_age_s == 7 * 24 * 3600.0 and otlp.timeout_s is None


# ---- a check's config section, the state file, a recording, the CLI ----------------------------


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"ignore_ports": ["mlx5_8/x"]},
         "check_config.infiniband.ignore_ports: 'mlx5_8/x': give an HCA (mlx5_8) or a port "
         "(mlx5_8/2)"),
        ({"ignore_port": []},
         "check_config.infiniband.ignore_port: unknown key (did you mean 'ignore_ports'?)"),
        ({"ignore_ports": "mlx5_8"},
         "check_config.infiniband.ignore_ports: expected a list, got a string"),
    ],
)  # fmt: skip
def test_a_check_config_section_mistake_names_the_key(
    section: dict[str, object], message: str
) -> None:
    checks = select(discover(), ["infiniband"], [])
    with pytest.raises(ConfigError) as caught:
        check_settings(checks, {"infiniband": section})
    assert str(caught.value) == message
    assert check_settings(checks, {"infiniband": {"ignore_ports": ["mlx5_8/2"]}})[
        "infiniband"
    ] == Settings(ignore_ports=["mlx5_8/2"])


def test_a_state_file_that_does_not_fit_names_the_key() -> None:
    data = b'{"format": "sitscheck-state", "version": 1, "items": [{"kind": "finding"}]}'
    assert state_problem(data) == "does not hold a valid state (items.0.key: required, not given)"
    cursor = b'{"format": "sitscheck-state", "version": 1, "kernel_cursor": {"boot_id": "b"}}'
    assert state_problem(cursor) == (
        "does not hold a valid state (kernel_cursor: a kernel cursor has either `seq` (kmsg) "
        "or `lines` (text))"
    )


def test_a_recording_that_does_not_fit_names_the_entry_of_a_map() -> None:
    gpus = [{"index": 0}, {"index": 1, "nvlink": [{"link": 0, "errors": {"crc": -1}}]}]
    assert snapshot_problem({"gpus": gpus}, "nvml.json") == (
        "nvml.json: gpus.1.nvlink.0.errors.crc: must be at least 0"
    )


def test_the_cli_says_it_in_one_line_and_exits_3(tmp_path: Path) -> None:
    site = tmp_path / "config.yaml"
    site.write_text(f"otlp:\n  headers:\n    authorization: {SECRET}\nexpect_gpus: -2\n")
    done = CliRunner().invoke(app, ["run", "--from", str(BUNDLE), "--config", str(site)])
    assert done.exit_code == 3
    assert done.stderr.splitlines() == [f"sitscheck: {site}:4: expect_gpus: must be at least 0"]
