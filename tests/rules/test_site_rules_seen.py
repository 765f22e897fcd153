"""Site rules are seen where they run (issue 29 item 12).

A site rule reached through `--rules`, the site config's `rules_dirs` or the default site
folder (/etc/sitscheck/rules.d: `app.SITE_DIR` pointed at a test folder) is listed by
`rules list` with the file and line it came from, explained by `explain` (its file too), and
fires in `run`: the three read the rule folders through one function (`app.rules_dirs`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from sitscheck.cli import app
from typer.testing import CliRunner, Result

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "h200x2-idle"
SITE_RULE = """\
params:
  site_gpus: 2
rules:
  - id: site.gpu_count_seen
    severity: warning
    when: node.gpu_count == params.site_gpus
    message: "the site's own rule saw {node.gpu_count} GPUs"
    description: a rule only this site has
    source: the site's runbook
"""


def site_folder(root: Path) -> Path:
    folder = root / "site-rules"
    folder.mkdir(parents=True)
    (folder / "gpus.yaml").write_text(SITE_RULE)
    return folder


def invoke(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str
) -> tuple[Result, Path]:
    """`sitscheck ARGV` made to read the site rule `how` it is reached (`--rules`, a config
    file's `rules_dirs`, or the default site folder): its result, and the rule's file."""
    folder = site_folder(tmp_path)
    extra: list[str] = []
    if how == "--rules":
        extra = ["--rules", str(folder)]
    elif how == "config":
        config = tmp_path / "config.yaml"
        config.write_text(f"rules_dirs: [{json.dumps(str(folder))}]\n")
        extra = ["--config", str(config)]
    else:
        site = tmp_path / "etc-sitscheck"
        site.mkdir()
        folder = folder.rename(site / "rules.d")
        monkeypatch.setattr("sitscheck.app.SITE_DIR", site)
    return CliRunner().invoke(app, [*argv, *extra]), folder / "gpus.yaml"


Sitscheck = Callable[..., tuple[Result, Path]]


@pytest.fixture(params=["--rules", "config", "site-folder"])
def sitscheck(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Sitscheck:
    """`invoke`, the site rule reached each way in turn."""
    return partial(invoke, request.param, tmp_path, monkeypatch)


def test_rules_list_shows_a_site_rule_with_its_file(sitscheck: Sitscheck) -> None:
    done, path = sitscheck("rules", "list")
    assert done.exit_code == 0, done.output
    rows = [line for line in done.output.splitlines() if line.startswith("site.gpu_count_seen ")]
    assert len(rows) == 1, done.output
    assert f" {path}:4 " in rows[0]
    assert rows[0].split()[1:4] == ["node", "warning", "runtime"]
    assert rows[0].endswith("the site's runbook")
    shipped = [line for line in done.output.splitlines() if line.startswith("quick_check.")]
    assert shipped and all("quick-check.yaml:" in line for line in shipped)


def test_explain_knows_a_site_rule_and_its_file(sitscheck: Sitscheck) -> None:
    done, path = sitscheck("explain", "site.gpu_count_seen")
    assert done.exit_code == 0, done.output
    assert done.output.startswith("site.gpu_count_seen: rule (")
    assert "a rule only this site has" in done.output
    flat = " ".join(done.output.split())
    assert "params: site_gpus = 2 (site file)" in flat
    assert f"file: {path}:4" in flat, done.output


def test_a_site_rule_fires_in_run(sitscheck: Sitscheck, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done, _path = sitscheck("run", "--from", str(EXAMPLE), "-o", f"json={report}")
    assert done.exit_code == 1, done.output  # the site rule's warning
    verdicts = json.loads(report.read_text())["verdicts"]
    fired = [v for v in verdicts if v["rule"] == "site.gpu_count_seen"]
    assert [(v["status"], v["message"]) for v in fired] == [
        ("warning", "the site's own rule saw 2 GPUs")
    ]


def test_a_missing_rules_folder_is_one_line_for_every_command(tmp_path: Path) -> None:
    """The same check of the folders for the three commands: a `--rules` that does not exist
    is a user's mistake, named, exit 3."""
    missing = tmp_path / "nowhere"
    for argv in (
        ["rules", "list"],
        ["explain", "xid.79"],
        ["run", "--from", str(EXAMPLE), "-o", "json=/dev/null"],
    ):
        done = CliRunner().invoke(app, [*argv, "--rules", str(missing)])
        assert done.exit_code == 3, (argv, done.output)
        assert f"--rules {missing}: no such file or folder" in done.output, (argv, done.output)
