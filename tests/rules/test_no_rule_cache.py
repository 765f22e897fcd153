"""Rules are read and compiled by every run, never kept between runs (issue 29 item 4).

The caches that kept the compiled programs and the parsed files in the user's cache folder
were keyed by the CEL library's file and the rule bytes, not by sitscheck's own code, so an
upgraded sitscheck read back the old code's shapes and fact paths. They are gone: a run
writes nothing into any cache folder, and a rule file changed between two runs of one
process is the one the second run reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "h200x2-idle"
SITE_RULE = """\
rules:
  - id: site.probe
    severity: {severity}
    when: node.gpu_count == {count}
    message: "{word} {{node.gpu_count}}"
"""


def test_a_run_writes_no_file_in_any_cache_folder(tmp_path: Path) -> None:
    """A replay in a process whose home, cache folders, temporary folder and working folder
    are empty folders of the test's: every one of them is still empty afterwards."""
    folders = {
        name: tmp_path / name
        for name in ("HOME", "XDG_CACHE_HOME", "CACHE_DIRECTORY", "TMPDIR", "cwd")
    }
    for folder in folders.values():
        folder.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("XDG_")}
    env.update({name: str(path) for name, path in folders.items() if name != "cwd"})
    for _ in range(2):  # the second run is where a cache would be read back
        done = subprocess.run(
            [sys.executable, "-m", "sitscheck", "run", "--from", str(EXAMPLE), "-o", "json"],
            cwd=folders["cwd"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    written = {name: sorted(p.name for p in path.rglob("*")) for name, path in folders.items()}
    assert written == {name: [] for name in folders}


@pytest.mark.parametrize("keep_stat", [False, True], ids=["touched", "same-size-and-mtime"])
def test_a_changed_rule_file_takes_effect_on_the_next_run_in_process(
    tmp_path: Path, keep_stat: bool
) -> None:
    """Two runs in one process, the site rule file rewritten between them (with
    `keep_stat`, to the same size and modification time, as a cache keyed by them would
    miss): the second run's verdict is the new rule's."""
    rules = tmp_path / "rules.d"
    rules.mkdir()
    path = rules / "site.yaml"
    path.write_text(SITE_RULE.format(severity="warning", count=2, word="first"))
    config = RunConfig(rules_dirs=[rules])

    def probe() -> tuple[str, str] | None:
        report = execute(RunRequest(config, str(EXAMPLE)))
        found = [(v.status.value, v.message) for v in report.verdicts if v.rule == "site.probe"]
        assert len(found) <= 1
        return found[0] if found else None

    assert probe() == ("warning", "first 2")
    before = path.stat()
    path.write_text(SITE_RULE.format(severity="critical", count=2, word="late"))
    if keep_stat:
        assert path.stat().st_size == before.st_size
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert probe() == ("critical", "late 2")
    path.write_text(SITE_RULE.format(severity="critical", count=3, word="late"))
    assert probe() == ("ok", "site.probe")  # quiet: an ok verdict names the rule
