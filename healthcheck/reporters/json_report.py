"""The JSON report: the `Report` model; its schema is published in schema/.

Each GPU device (of a finding, a verdict, a cleared item) carries the GPU's UUID from the
driver's inventory, so automation can act on the GPU without a second lookup.
"""

from __future__ import annotations

import json

from ..export.inventory import with_gpu_uuids
from ..models import Report
from ..structs import json_schema, json_text


def render_json(report: Report, verbose: bool = False) -> str:
    return json_text(with_gpu_uuids(report)) + "\n"


def report_schema() -> str:
    return json.dumps(json_schema(Report), indent=2, sort_keys=True) + "\n"
