"""A fresh venv holding sitscheck and example plugins, as an operator installs them: each a
separate package, built into a wheel from the source tree and pip-installed beside sitscheck,
found only through its entry points.

The venv is made without system site packages; the wheels are installed with `pip install
--no-deps --no-index`, so nothing is downloaded. sitscheck's own dependencies (typer,
msgspec, CEL, ...) come from the environment running the tests, through a .pth file naming
where they are installed: only sitscheck and the plugins are new. Skipped only where no build
backend can be had offline.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, requires, version
from pathlib import Path

import pytest
from corpus_paths import REPO_ROOT

# what `pip wheel` of sitscheck reads: the build configuration and the three package folders
SOURCES = ("pyproject.toml", "setup.py", "README.md", "healthcheck", "checks", "rules")
OFFLINE_FAILURES = (
    "No matching distribution found",
    "Could not find a version that satisfies",
    "Failed to establish a new connection",
    "Network is unreachable",
)


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    plugins: dict[str, Path]  # each plugin's source tree (with its tests), as it was built
    wheels: Path
    setup_s: float

    def sitscheck(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.root / "bin" / "sitscheck"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def imports_its_own(self, *modules: str) -> bool:
        """Whether the venv's python imports each module from the venv itself."""
        code = "; ".join(f"import {m}; print({m}.__file__)" for m in modules)
        where = [Path(line) for line in run([str(self.python), "-c", code]).stdout.split()]
        root = self.root.resolve()
        return len(where) == len(modules) and all(p.resolve().is_relative_to(root) for p in where)

    def plugin_tests(self, name: str) -> subprocess.CompletedProcess[str]:
        """The plugin's own tests, against the installed package (pythonpath emptied: they
        import it from site-packages, not from its src/ folder)."""
        argv = [str(self.python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        return subprocess.run(
            [*argv, "-o", "pythonpath=", "tests"],
            cwd=self.plugins[name],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def make_venv(work: Path, plugins: list[str]) -> Venv:
    """sitscheck and `plugins` (folders of examples/plugins) built and installed in a new venv
    under `work`."""
    started = time.monotonic()
    # Built from copies: a build writes build/ and *.egg-info beside the sources.
    core = copy_core(work / "sitscheck")
    copies = {name: work / name for name in plugins}
    for name, target in copies.items():
        copy(REPO_ROOT / "examples" / "plugins" / name, target)
    wheels = work / "wheels"
    build_wheels([core, *copies.values()], wheels)
    root = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(root)])
    python = root / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    built = [str(path) for path in sorted(wheels.glob("*.whl"))]
    run([*pip, "install", "-q", "--no-deps", "--no-index", *built])
    (site_packages(python) / "sitscheck-test-deps.pth").write_text(
        "\n".join(dependency_dirs()) + "\n"
    )
    return Venv(root, python, copies, wheels, time.monotonic() - started)


def copy_core(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in SOURCES:
        copy(REPO_ROOT / name, target / name)
    return target


def copy(source: Path, target: Path) -> None:
    ignore = shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", ".venv", ".mypy_cache", ".ruff_cache"
    )
    if source.is_dir():
        shutil.copytree(source, target, ignore=ignore)
    else:
        shutil.copyfile(source, target)


def build_wheels(sources: list[Path], into: Path) -> None:
    """`pip wheel` of each source tree, without its dependencies. Without build isolation
    where this environment has the build backend, else isolated (which needs an index)."""
    flags = ["--no-build-isolation"] if _has_build_backend() else []
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *flags, "-w", str(into)]
        + [str(s) for s in sources],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 and any(text in done.stderr for text in OFFLINE_FAILURES):
        pytest.skip("no build backend here and no package index to fetch one from")
    assert done.returncode == 0, done.stderr[-3000:]


def _has_build_backend() -> bool:
    try:
        major = int(version("setuptools").split(".")[0])
        version("wheel")
    except (PackageNotFoundError, ValueError):
        return False
    return major >= 68


def dependency_dirs() -> list[str]:
    """Where this environment has sitscheck's runtime dependencies (and pytest, for the
    plugins' own tests), in the order found."""
    try:
        declared = requires("sitscheck") or []
    except PackageNotFoundError:
        pytest.skip("sitscheck is not installed here: its dependencies cannot be found")
    names = [
        re.split(r"[\s;<>=!~\[(]", line, maxsplit=1)[0]
        for line in declared
        if "extra ==" not in line
    ]
    dirs: list[str] = []
    for name in [*names, "pytest"]:
        folder = str(Path(str(distribution(name).locate_file(""))).resolve())
        if folder not in dirs:
            dirs.append(folder)
    return dirs


def site_packages(python: Path) -> Path:
    done = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    return Path(done.stdout.strip())


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{argv[:4]}: {done.stderr[-3000:]}"
    return done
