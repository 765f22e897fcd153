"""The html report in a real headless browser (issue 30: "A test opens the page in a real
headless browser ... The page renders one chart per GPU and makes no network request, and the
test keeps a screenshot for a reviewer to open").

Slow-marked (`pytest -m slow`). Debian's `chromium-headless-shell` (or `chromium`), driven by
its own flags: `--dump-dom` gives the DOM the browser built (its SVG charts counted),
`--log-net-log` every request it made (none may leave the page: a control page that does fetch
proves the log sees requests), and `--screenshot` the picture kept under
tests/reporters/artifacts/ (ignored by git), whose path the test prints: a healthy 1- and
2-GPU soak, and a 2-GPU one whose GPU 1 runs hot and is slowed down by its hardware for 20 s
(soak_bundle.FAULT_*), for a reviewer to compare. Every name a page could resolve maps to
nothing (`--host-resolver-rules`), so even a regression would fetch nothing from outside.
Skipped, with the reason, without a browser (`.ci/run` installs it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.reporters.html import render_html

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak_bundle import soak_bundle

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
BROWSER_S = 60
# (width, height) of the screenshot: the whole page of a 1- or 2-GPU acceptance
WINDOW = {1: (1100, 1750), 2: (1100, 2650)}
pytestmark = pytest.mark.slow  # five browser starts: about 15 s


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        f"no headless Chromium installed ({', '.join(BROWSERS)}); .ci/run installs Debian's "
        "chromium-headless-shell"
    )


def run_browser(page: Path, profile: Path, *action: str) -> subprocess.CompletedProcess[str]:
    argv = [
        browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        *action,
        page.as_uri(),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=BROWSER_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def requests(page: Path, folder: Path) -> tuple[list[str], str]:
    """The URLs the browser asked the network for while it loaded `page`, and its DOM."""
    log = folder / f"{page.stem}.netlog.json"
    done = run_browser(page, folder / f"{page.stem}-profile", f"--log-net-log={log}", "--dump-dom")
    netlog: dict[str, Any] = json.loads(log.read_text(encoding="utf-8"))
    urls = [
        str(event["params"]["url"])
        for event in netlog["events"]
        if isinstance(event.get("params"), dict) and "url" in event["params"]
    ]
    return [u for u in urls if not u.startswith(("file:", "data:", "about:"))], done.stdout


class Charts(HTMLParser):
    """The chart elements of a DOM: each `svg.trace`, with the panels and lines it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[dict[str, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "svg" and "trace" in classes:
            self.charts.append({"panels": 0, "lines": 0})
        elif self.charts and tag == "g" and "panel" in classes:
            self.charts[-1]["panels"] += 1
        elif self.charts and tag == "path" and "line" in classes:
            self.charts[-1]["lines"] += 1


def test_the_network_log_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """The control: the log used below records a request, so an empty one means none."""
    page = tmp_path / "fetches.html"
    page.write_text('<!DOCTYPE html><img src="http://example.invalid/pixel.png">')
    fetched, _dom = requests(page, tmp_path)
    assert "http://example.invalid/pixel.png" in fetched


@pytest.mark.parametrize(
    ("name", "gpus", "faulty"),
    [("soak-h200x1", 1, None), ("soak-h200x2", 2, None), ("soak-h200x2-gpu1-throttled", 2, 1)],
)
def test_the_page_shows_one_chart_per_gpu_and_fetches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, gpus: int, faulty: int | None
) -> None:
    bundle = soak_bundle(tmp_path / name, gpus, faulty=faulty)
    report = execute(RunRequest(RunConfig(), str(bundle)))
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(report), encoding="utf-8")

    fetched, dom = requests(page, tmp_path)
    assert fetched == []
    charts = Charts()
    charts.feed(dom)
    # one chart per GPU: clocks, power, temperature, iteration time (GPU and HBM temperature)
    assert charts.charts == [{"panels": 4, "lines": 5}] * gpus

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"{name}.png"
    width, height = WINDOW[gpus]
    run_browser(page, tmp_path / "shot-profile", f"--window-size={width},{height}",
                f"--screenshot={shot}")  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copyfile(page, shot.with_suffix(".html"))
    with capsys.disabled():
        print(f"\nscreenshot for a reviewer: {shot} (the page beside it: {shot.stem}.html)")
