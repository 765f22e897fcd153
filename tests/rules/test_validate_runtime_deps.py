"""`sitscheck rules validate` with the runtime dependencies alone (issue 29 item 10).

A pip, pipx or .deb install has no test extras: on Python >= 3.11 no celpy and no lark
(cel-expr-python is the runtime's CEL), on 3.10 no cel-expr-python. Here the modules this
Python's runtime does not install are made unimportable in a child interpreter, which then
validates the shipped rules, the rules folder and a site file with a misspelt fact path:
each works as it does with every extra, and none of those modules was asked for.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# pyproject.toml: cel-expr-python on >= 3.11, cel-python (celpy, and lark) below
RUNTIME_CEL = "cel_expr_python" if sys.version_info >= (3, 11) else "celpy"
NOT_RUNTIME = ("celpy", "lark") if RUNTIME_CEL == "cel_expr_python" else ("cel_expr_python",)

pytestmark = pytest.mark.skipif(
    find_spec(RUNTIME_CEL) is None, reason=f"{RUNTIME_CEL} (this Python's runtime CEL) missing"
)

CHILD = """\
import importlib.util
import sys
from importlib.abc import MetaPathFinder

BLOCKED = set(sys.argv[1].split(","))
asked = []


class Block(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            asked.append(name)
            raise ModuleNotFoundError(f"No module named {name!r} (not a runtime dependency)")
        return None


sys.meta_path.insert(0, Block())
# A probe (importlib.util.find_spec) finds a blocked module absent, as an install without it
# does: it is no import.
probe = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (
    None if name.partition(".")[0] in BLOCKED else probe(name, package)
)
from sitscheck.cli import main

sys.argv = ["sitscheck", *sys.argv[2:]]
try:
    main()
except SystemExit as exit:
    print("asked for:", ",".join(asked) or "nothing", file=sys.stderr)
    raise
"""

SITE_RULE = """\
rules:
  - id: site.nvlink_count
    scope: gpu
    severity: warning
    when: >-
      gpu.nvlink.links_active > 0
      && gpu.nvlink.links_reportd < 18
    message: "GPU {gpu.index}: {gpu.nvlink.links_active} links up"
"""


def validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, ",".join(NOT_RUNTIME), "rules", "validate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.parametrize("args", [(), ("rules",)], ids=["shipped", "rules-folder"])
def test_the_shipped_rules_validate_with_the_runtime_dependencies_alone(
    args: tuple[str, ...],
) -> None:
    done = validate(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ") and "internal error" not in done.stderr
    assert done.stderr.strip().endswith("asked for: nothing"), done.stderr


def test_a_misspelt_fact_path_is_found_with_the_runtime_dependencies_alone(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(SITE_RULE)
    done = validate(str(site))
    assert done.returncode == 3
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"{site}:7: ") and "links_reportd" in lines[0], done.stderr
    assert "did you mean 'links_reported'" in lines[0]
    assert "internal error" not in done.stderr
    assert lines[-1] == "asked for: nothing", done.stderr
