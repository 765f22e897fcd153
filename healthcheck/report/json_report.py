"""The JSON report: the `Report` model as it is; its schema is published in schema/."""

from __future__ import annotations

import json

from ..models import Report


def render_json(report: Report, verbose: bool = False) -> str:
    return report.model_dump_json(indent=2) + "\n"


def report_schema() -> str:
    return json.dumps(Report.model_json_schema(), indent=2, sort_keys=True) + "\n"
