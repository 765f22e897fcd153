"""Pick the hardware profile: by name, else from the GPUs the driver check saw."""

from __future__ import annotations

import re
from typing import Any

from .engine.model import Profile
from .errors import ConfigError
from .models import CheckResult


def select_profile(
    profiles: dict[str, Profile], requested: str | None, results: list[CheckResult]
) -> Profile | None:
    if requested:
        if requested not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(f"no such profile {requested!r} (known: {known})")
        return profiles[requested]
    gpus = _gpus(results)
    if not gpus:
        return None
    for profile in profiles.values():
        if all(matches(profile.data, gpu) for gpu in gpus):
            return profile
    return None


def matches(profile: dict[str, Any], gpu: dict[str, Any]) -> bool:
    match = profile.get("match") or {}
    device_id = str(gpu.get("pci_device_id") or "").lower()
    ids = [str(i).lower() for i in match.get("pci_device_ids") or []]
    if device_id and any(device_id.startswith(i) or device_id.endswith(i) for i in ids):
        return True
    name = str(gpu.get("name") or "")
    return any(re.search(pattern, name, re.IGNORECASE) for pattern in match.get("names") or [])


def _gpus(results: list[CheckResult]) -> list[dict[str, Any]]:
    driver = next((r for r in results if r.name == "driver"), None)
    if driver is None:
        return []
    return [g for g in driver.facts.get("gpus") or [] if isinstance(g, dict)]
