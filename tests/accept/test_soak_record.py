"""The soak's record says when each GPU's load began on its sampler's clock: the samples count
from the sampler's start (before the children start: interpreter, CUDA context, PyTorch), the
iteration times from the load's, and the checks cut the trace to the load with it."""

from __future__ import annotations

import time
from types import SimpleNamespace

from sitscheck.accept.phases import _complete
from sitscheck.workloads.children import Child, Target, _take

H200 = Target(index=0, uuid="GPU-22ccd39c", pci_bus_id="0000:00:06.0", name="NVIDIA H200")


def test_ready_is_when_the_child_said_its_work_starts() -> None:
    child = Child(H200)
    before = time.monotonic()
    _take(child, b'{"event": "doing", "what": "soak: full load"}')
    assert child.ready == 0.0
    _take(child, b'{"event": "ready", "engine": "torch"}')
    assert child.engine == "torch" and before <= child.ready <= time.monotonic()


def test_the_soak_record_holds_the_loads_start_on_the_samplers_clock() -> None:
    child = Child(H200, ready=1000.0, result={"seconds": 120.0}, times=[(1.0, [1.656])])
    sampler = SimpleNamespace(started=996.75, samples={0: [{"t": 0.0}, {"t": 1.0}]})
    ctx = SimpleNamespace(gpus=SimpleNamespace(max_sm_clock=lambda index: 1980), digests={})
    _complete(SimpleNamespace(name="soak"), ctx, child, {}, {}, sampler)  # type: ignore[arg-type]
    assert child.result is not None
    assert child.result["load_started_s"] == 3.25
    assert child.result["samples"] == [{"t": 0.0}, {"t": 1.0}]
    assert child.result["times"] == [[1.0, [1.656]]]


def test_a_child_that_never_said_ready_has_no_load_start() -> None:
    child = Child(H200, result={"seconds": 0.0})
    sampler = SimpleNamespace(started=996.75, samples={})
    ctx = SimpleNamespace(gpus=SimpleNamespace(max_sm_clock=lambda index: None), digests={})
    _complete(SimpleNamespace(name="soak"), ctx, child, {}, {}, sampler)  # type: ignore[arg-type]
    assert child.result is not None and child.result["load_started_s"] is None
