"""NVML field values (`nvmlDeviceGetFieldValues`): several fields in one call (under the
deadline), each with its own return code.

The call itself can fail (every field then shares its reading); otherwise each field's
`nvmlReturn` is its own outcome: 0 is a value, NVML_ERROR_NOT_SUPPORTED is `not_supported`
(not zero, not an error), any other code is `error`. A field is an id, or an (id, scope) pair
for the fields NVML scopes (NVLink counters take the link, or `SCOPE_ALL_LINKS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .nvml import Nvml, Reading

Field = int | tuple[int, int]
# nvml.h, NVLink throughput counters: "A scopeId of UINT_MAX returns aggregate value summed up
# across all links for the specified counter type in fieldId."
SCOPE_ALL_LINKS = 0xFFFFFFFF
# nvmlValueType_t -> the member of nvmlValue_t holding the value
_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


def read_fields(nvml: Nvml, handle: Any, fields: Sequence[Field]) -> list[Reading[Any]]:
    """Each field's reading, in the order asked, from one call."""
    call = nvml.read("nvmlDeviceGetFieldValues", handle, list(fields))
    if not call.ok:
        return [call for _ in fields]
    entries = list(call.value or [])
    readings: list[Reading[Any]] = []
    for position, field in enumerate(fields):
        entry = entries[position] if position < len(entries) else None
        code = getattr(entry, "nvmlReturn", None)
        state = nvml.return_state(code)
        if state == "ok":
            readings.append(Reading(field_number(entry)))
            continue
        why = nvml.error_name(code) or ("no entry" if entry is None else f"return code {code}")
        readings.append(Reading(None, state, f"nvmlDeviceGetFieldValues({_named(field)}): {why}"))
    return readings


def field_number(entry: Any) -> Any:
    """The value of one `nvmlFieldValue_t`, by its value type."""
    value_type = getattr(entry, "valueType", None)
    member = _MEMBERS.get(value_type if isinstance(value_type, int) else -1, "ullVal")
    return getattr(getattr(entry, "value", None), member, None)


def _named(field: Field) -> str:
    if isinstance(field, tuple):
        scope = "all links" if field[1] == SCOPE_ALL_LINKS else f"link {field[1]}"
        return f"field {field[0]}, {scope}"
    return f"field {field}"
