"""The package list, found: healthcheck/ ships as the import package `sitscheck`, checks/ as
`sitscheck.checks` and rules/ as `sitscheck.rules`, with every package below each of them.

Everything else is in pyproject.toml. This file exists because `[tool.setuptools.packages.find]`
names each package after its folder (`healthcheck.sources`) and cannot ship a folder under
another name, while a list kept by hand there drops a new package silently.
"""

from __future__ import annotations

from setuptools import find_packages, setup

# import name -> folder: the design's folders follow the data path, one import package holds
# them (nothing named `checks` or `rules` lands at the top of site-packages)
PACKAGE_DIR = {"sitscheck": "healthcheck", "sitscheck.checks": "checks", "sitscheck.rules": "rules"}


def packages() -> list[str]:
    """Each folder of `PACKAGE_DIR` and every package (a folder with `__init__.py`) below it."""
    found: list[str] = []
    for name, folder in PACKAGE_DIR.items():
        found.append(name)
        found.extend(f"{name}.{below}" for below in find_packages(folder))
    return found


if __name__ == "__main__":
    setup(package_dir=PACKAGE_DIR, packages=packages())
