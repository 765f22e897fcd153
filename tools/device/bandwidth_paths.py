"""On a machine with one GPU: run the probe's several-GPU code paths on real hardware by
opening that one GPU WAYS times (each with its own streams, events and buffers).

It times what a WAYS-GPU probe does one GPU at a time (opening them in parallel, each
measured alone, all copying at once, a copy for every ordered pair) and so bounds the probe's
time on a WAYS-GPU node: the alone phase is the same work; "all at once" shares one PCIe link
here; the pair copies run inside one GPU's memory here, not over NVLink (the caller scales
them). `concurrent_h2d` over the handles measures copy streams sharing one link.
Usage (device machine): python3 tools/device/bandwidth_paths.py [WAYS]
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from sitscheck.probes.bandwidth.cuda import Driver
from sitscheck.probes.bandwidth.measure import Gpu, Plan, alone, concurrent_h2d, open_gpu, series


def main(ways: int) -> None:
    driver = Driver.load()
    driver.init()
    plan = Plan(deadline=time.monotonic() + 60.0)
    phases: dict[str, float] = {}
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=ways) as pool:
        handles = list(pool.map(lambda _: open_gpu(driver, 0, plan.nbytes), range(ways)))
    phases["setup"] = round(time.monotonic() - began, 3)
    for number, handle in enumerate(handles):
        handle.ordinal = number  # a label: the handles' figures apart (one device)
    result: dict[str, Any] = {"ways": ways, "gpu": handles[0].identity}
    try:
        result["can_access_peer_self"] = _peer(driver, handles[0].device)
        result["alone"] = _timed(phases, "alone", lambda: [alone(driver, h, plan) for h in handles])
        result["concurrent"] = _timed(
            phases, "concurrent", lambda: concurrent_h2d(driver, handles, plan)
        )
        result["pairs"] = _timed(phases, "pairs", lambda: _pairs(driver, handles, plan))
    finally:
        began = time.monotonic()
        for handle in reversed(handles):
            handle.close()
        phases["release"] = round(time.monotonic() - began, 3)
    result["phases_s"] = phases
    print(json.dumps(result))


def _pairs(driver: Driver, handles: list[Gpu], plan: Plan) -> list[float]:
    figures = []
    for src in handles:
        for dst in handles:
            if src is not dst:
                copy = partial(
                    driver.device_to_device, dst.dev_b, src.dev_a, plan.nbytes, src.stream
                )
                figures.append(series(driver, src, plan, copy)["gbs"])
    return figures


def _timed(phases: dict[str, float], name: str, work: Any) -> Any:
    began = time.monotonic()
    value = work()
    phases[name] = round(time.monotonic() - began, 3)
    return value


def _peer(driver: Driver, device: int) -> str:
    try:
        return str(driver.can_access_peer(device, device))
    except RuntimeError as exc:
        return f"error: {exc}"


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
