"""Device probe: what NVML answers for the readings gpu_telemetry takes since issue 'readings'
(memory v1/v2, total energy, NVLink throughput counters all-links and per link, GPM NVLink
totals, NVLink states), raw through pynvml, each as its value or its NVML error name.

Run on the lent GPU machine: `python3 tools/device/nvml_readings_probe.py` (prints JSON;
`tools/device/nvml_probes.sh` runs it with the other NVML probes).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pynvml as N

ALL_LINKS = 0xFFFFFFFF
THROUGHPUT = {"rx": 139, "tx": 138}


def answer(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except N.NVMLError as exc:
        return f"error: {exc} ({exc.value})"


def name_of(code: int) -> str:
    for name in dir(N):
        if name.startswith("NVML_ERROR_") and getattr(N, name) == code:
            return name
    return str(code)


def fields(handle: Any, asked: list[Any]) -> list[Any]:
    got = answer(N.nvmlDeviceGetFieldValues, handle, asked)
    if isinstance(got, str):
        return [got]
    return [e.value.ullVal if e.nvmlReturn == 0 else name_of(e.nvmlReturn) for e in got]


def gpm(handle: Any) -> Any:
    support = answer(N.nvmlGpmQueryDeviceSupport, handle)
    if isinstance(support, str) or not support.isSupportedDevice:
        return {"supported": str(support)}
    first, second = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleGet(handle, first)
    time.sleep(1.0)
    N.nvmlGpmSampleGet(handle, second)
    request = N.c_nvmlGpmMetricsGet_t()
    request.version = N.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 2
    request.sample1, request.sample2 = first, second
    request.metrics[0].metricId, request.metrics[1].metricId = 60, 61
    got = answer(N.nvmlGpmMetricsGet, request)
    out = {"call": "ok" if not isinstance(got, str) else got}
    for slot, label in enumerate(("nvlink_rx_mib_s", "nvlink_tx_mib_s")):
        metric = request.metrics[slot]
        out[label] = metric.value if metric.nvmlReturn == 0 else name_of(metric.nvmlReturn)
    N.nvmlGpmSampleFree(first)
    N.nvmlGpmSampleFree(second)
    return out


def main() -> None:
    N.nvmlInit()
    report: dict[str, Any] = {
        "driver": N.nvmlSystemGetDriverVersion(),
        "nvml": N.nvmlSystemGetNVMLVersion(),
        "gpus": [],
    }
    for index in range(N.nvmlDeviceGetCount()):
        handle = N.nvmlDeviceGetHandleByIndex(index)
        v1 = answer(N.nvmlDeviceGetMemoryInfo, handle)
        v2 = answer(N.nvmlDeviceGetMemoryInfo, handle, N.nvmlMemory_v2)
        states = [answer(N.nvmlDeviceGetNvLinkState, handle, link) for link in range(18)]
        gpu = {
            "name": N.nvmlDeviceGetName(handle),
            "memory_v1": v1 if isinstance(v1, str) else {"total": v1.total, "used": v1.used},
            "memory_v2": v2
            if isinstance(v2, str)
            else {"total": v2.total, "reserved": v2.reserved, "used": v2.used, "free": v2.free},
            "energy_mj": answer(N.nvmlDeviceGetTotalEnergyConsumption, handle),
            "nvlink_states": states,
            "throughput_all_links_kib": fields(
                handle, [(THROUGHPUT["rx"], ALL_LINKS), (THROUGHPUT["tx"], ALL_LINKS)]
            ),
            "throughput_rx_per_link_kib": fields(handle, [(139, link) for link in range(18)]),
            "throughput_bare_id_kib": fields(handle, [139, 138]),
            "gpm_nvlink": gpm(handle),
        }
        report["gpus"].append(gpu)
    N.nvmlShutdown()
    print(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
