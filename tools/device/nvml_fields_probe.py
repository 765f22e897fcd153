"""Device probe: what NVML's batched field values give on this GPU, and what calls cost.

Run on the lent GPU machine (only pynvml needed): `python3 tools/device/nvml_fields_probe.py`.
Prints JSON: per-link NVLink readings through the per-link API vs through
`nvmlDeviceGetFieldValues` with (fieldId, scopeId=link) pairs and the legacy per-lane ids;
the latency of single calls; and whether calls on two GPUs from two threads overlap.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import pynvml as N

LINKS = 18
LEGACY = {  # per-lane field ids, L0-L5 then L6-L11
    "crc_flit": list(range(32, 38)) + list(range(96, 102)),
    "crc_data": list(range(39, 45)) + list(range(102, 108)),
    "replay": list(range(46, 52)) + list(range(108, 114)),
    "recovery": list(range(53, 59)) + list(range(114, 120)),
}
SCOPED = {
    "dl_replay": 161,
    "dl_recovery": 162,
    "dl_crc": 163,
    "speed": 164,
    "state": 165,
    "version": 166,
    "remote_link_id": 146,
}
TOTALS = {
    "crc_flit_total": 38,
    "crc_data_total": 45,
    "replay_total": 52,
    "recovery_total": 59,
    "link_count": 91,
    "ecc_data_total": 160,
    "pcie_replay": 94,
    "mem_temp": 82,
    "recovery_action": 230,
}


def number(entry: Any) -> Any:
    if entry.nvmlReturn != 0:
        return f"err{entry.nvmlReturn}"
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(
        entry.valueType, "ullVal"
    )
    return getattr(entry.value, member)


def api(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except N.NVMLError as exc:
        return f"NVMLError {exc}"


def timed(label: str, fn: Any, *args: Any, n: int = 50) -> dict[str, Any]:
    started = time.perf_counter()
    for _ in range(n):
        try:
            fn(*args)
        except N.NVMLError:
            pass
    return {"call": label, "us": round((time.perf_counter() - started) / n * 1e6, 1)}


def per_link_api(h: Any) -> list[dict[str, Any]]:
    out = []
    for link in range(LINKS):
        state = api(N.nvmlDeviceGetNvLinkState, h, link)
        entry: dict[str, Any] = {"link": link, "state": state}
        if isinstance(state, str):
            out.append(entry)
            break
        entry["version"] = api(N.nvmlDeviceGetNvLinkVersion, h, link)
        remote = api(N.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
        entry["remote"] = remote if isinstance(remote, str) else remote.busId
        for name, code in (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3)):
            entry[name] = api(N.nvmlDeviceGetNvLinkErrorCounter, h, link, code)
        out.append(entry)
    return out


def fields(h: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    request = [(fid, link) for fid in SCOPED.values() for link in range(LINKS)]
    started = time.perf_counter()
    values = api(N.nvmlDeviceGetFieldValues, h, request)
    result["scoped_call_us"] = round((time.perf_counter() - started) * 1e6, 1)
    if isinstance(values, str):
        result["scoped"] = values
    else:
        result["scoped"] = {
            name: [number(values[i * LINKS + link]) for link in range(LINKS)]
            for i, name in enumerate(SCOPED)
        }
    legacy_ids = [fid for ids in LEGACY.values() for fid in ids]
    values = api(N.nvmlDeviceGetFieldValues, h, legacy_ids)
    if isinstance(values, str):
        result["legacy"] = values
    else:
        result["legacy"] = {
            name: [number(values[i * 12 + lane]) for lane in range(12)]
            for i, name in enumerate(LEGACY)
        }
    # do legacy per-lane ids honour a scope? (lane 0 id with scopeId=link)
    values = api(N.nvmlDeviceGetFieldValues, h, [(39, link) for link in range(LINKS)])
    result["crc_data_L0_scoped"] = (
        values if isinstance(values, str) else [number(v) for v in values]
    )
    values = api(N.nvmlDeviceGetFieldValues, h, list(TOTALS.values()))
    result["totals"] = (
        values
        if isinstance(values, str)
        else {name: number(values[i]) for i, name in enumerate(TOTALS)}
    )
    return result


def overlap(handles: list[Any], calls: int = 200) -> dict[str, Any]:
    def work(h: Any) -> None:
        for i in range(calls):
            try:
                N.nvmlDeviceGetNvLinkErrorCounter(h, i % LINKS, 3)
            except N.NVMLError:
                pass

    started = time.perf_counter()
    work(handles[0])
    one = time.perf_counter() - started
    threads = [threading.Thread(target=work, args=(h,)) for h in handles]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    many = time.perf_counter() - started
    return {
        "calls_per_gpu": calls,
        "one_gpu_s": round(one, 4),
        f"{len(handles)}_gpus_threads_s": round(many, 4),
    }


def main() -> int:
    N.nvmlInit()
    count = N.nvmlDeviceGetCount()
    handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    h = handles[0]
    report: dict[str, Any] = {"driver": N.nvmlSystemGetDriverVersion(), "gpus": count}
    report["per_link_api"] = per_link_api(h)
    report["fields"] = fields(h)
    report["latency"] = [
        timed("NvLinkState", N.nvmlDeviceGetNvLinkState, h, 0),
        timed("NvLinkErrorCounter", N.nvmlDeviceGetNvLinkErrorCounter, h, 0, 3),
        timed("NvLinkRemotePciInfo", N.nvmlDeviceGetNvLinkRemotePciInfo, h, 0),
        timed("NvLinkVersion", N.nvmlDeviceGetNvLinkVersion, h, 0),
        timed("PowerUsage", N.nvmlDeviceGetPowerUsage, h),
        timed("Temperature", N.nvmlDeviceGetTemperature, h, 0),
        timed("ClockInfo", N.nvmlDeviceGetClockInfo, h, 1),
        timed("UtilizationRates", N.nvmlDeviceGetUtilizationRates, h),
        timed("ClocksEventReasons", N.nvmlDeviceGetCurrentClocksEventReasons, h),
        timed("TotalEccErrors", N.nvmlDeviceGetTotalEccErrors, h, 0, 0),
        timed("ViolationStatus", N.nvmlDeviceGetViolationStatus, h, 0),
        timed("RemappedRows", N.nvmlDeviceGetRemappedRows, h),
        timed("RetiredPagesPending", N.nvmlDeviceGetRetiredPagesPendingStatus, h),
        timed("PcieReplayCounter", N.nvmlDeviceGetPcieReplayCounter, h),
        timed("PcieThroughput", N.nvmlDeviceGetPcieThroughput, h, 0, n=5),
        timed("FieldValues[1]", N.nvmlDeviceGetFieldValues, h, [82]),
        timed(
            "FieldValues[5x18 scoped]",
            N.nvmlDeviceGetFieldValues,
            h,
            [(f, link) for f in (161, 162, 163, 165, 166) for link in range(LINKS)],
            n=20,
        ),
        timed(
            "FieldValues[48 legacy]",
            N.nvmlDeviceGetFieldValues,
            h,
            [fid for ids in LEGACY.values() for fid in ids],
            n=20,
        ),
        timed("Name", N.nvmlDeviceGetName, h),
        timed("PciInfo", N.nvmlDeviceGetPciInfo, h),
        timed(
            "TopologyCommonAncestor", N.nvmlDeviceGetTopologyCommonAncestor, h, handles[-1], n=10
        ),
    ]
    report["overlap"] = overlap(handles)
    json.dump(report, sys.stdout, indent=1, default=str)
    print()
    N.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
