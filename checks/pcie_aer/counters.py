"""Pure: the AER counter files of sysfs (`aer_dev_*`, `aer_rootport_total_err_*`)."""

from __future__ import annotations

DEVICE_COUNTERS = {
    "aer_dev_correctable": "correctable",
    "aer_dev_nonfatal": "nonfatal",
    "aer_dev_fatal": "fatal",
}
ROOTPORT_COUNTERS = {
    "aer_rootport_total_err_cor": "rootport_correctable",
    "aer_rootport_total_err_nonfatal": "rootport_nonfatal",
    "aer_rootport_total_err_fatal": "rootport_fatal",
}


def parse_device_counters(text: str) -> dict[str, int]:
    """`RxErr 0\\nBadTLP 3\\n...\\nTOTAL_ERR_COR 3` → {"RxErr": 0, ..., "TOTAL": 3}."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        name = "TOTAL" if parts[0].startswith("TOTAL_ERR") else parts[0]
        counts[name] = int(parts[1])
    return counts


def parse_total(text: str) -> int | None:
    value = text.strip()
    return int(value) if value.isdigit() else None
