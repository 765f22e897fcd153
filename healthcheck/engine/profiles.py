"""Pick the hardware profile: by name, else from the GPUs the driver check saw.

The profile is chosen from the GPUs that answer, and from a GPU that does not (lost, needing
a reset) only where its identity is still known (its PCI device id from sysfs or nvidia-smi,
its name): a GPU fallen off the bus must not switch the profile off for the ones that still
answer, and it is judged against the same profile.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ConfigError
from ..models import CheckResult
from .model import Profile


def select_profile(
    profiles: dict[str, Profile], requested: str | None, results: list[CheckResult]
) -> Profile | None:
    if requested:
        if requested not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(f"no such profile {requested!r} (known: {known})")
        return profiles[requested]
    gpus = [g for g in _gpus(results) if _judged(g)]
    if not gpus:
        return None
    for profile in profiles.values():
        if all(matches(profile.data, gpu) for gpu in gpus):
            return profile
    return None


def matches(profile: dict[str, Any], gpu: dict[str, Any]) -> bool:
    """The GPU's PCI device id decides where both it and the profile's ids are known (the
    name "NVIDIA GH200 480GB" contains "H200", device 0x2342 is no H200 SXM, 0x2335); the
    name decides otherwise."""
    match = profile.get("match") or {}
    device_id = str(gpu.get("pci_device_id") or "").lower()
    ids = [str(i).lower() for i in match.get("pci_device_ids") or []]
    if device_id and ids:
        return any(device_id.startswith(i) or device_id.endswith(i) for i in ids)
    name = str(gpu.get("name") or "")
    return any(re.search(pattern, name, re.IGNORECASE) for pattern in match.get("names") or [])


def _judged(gpu: dict[str, Any]) -> bool:
    """A GPU that answers, or one whose identity is still known."""
    return gpu.get("state", "ok") == "ok" or bool(gpu.get("pci_device_id") or gpu.get("name"))


def _gpus(results: list[CheckResult]) -> list[dict[str, Any]]:
    driver = next((r for r in results if r.name == "driver"), None)
    if driver is None:
        return []
    return [g for g in driver.facts.get("gpus") or [] if isinstance(g, dict)]
