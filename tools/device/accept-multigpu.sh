#!/usr/bin/env bash
# The multi-GPU phase of `sitscheck accept` on the lent GPU machine: nvidia-h200-x2 or larger
# (on one GPU, what can run there: a rank alone, a rank missing its GPUs, the phase's runner
# with a GPU listed twice, and `accept` planning the phase out).
#
# NVLink multicast stays off on the shared machines (a program using it can take the host's
# GPUs out of service): NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
# NVSHMEM_DISABLE_NVLS=1 are exported below, before anything starts, and sitscheck hands
# NCCL_*, NVSHMEM_* and TORCH_SYMM_MEM_* on to its ranks unchanged; each rank reports what it
# got (`nvls_disabled`), and the script stops if a rank ran without it.
#
# Everything lands under $OUT. The checkout that travels may not be this one: carry a folder
# holding this script and the wheels (the dependencies' and this tree's own, made by
# `pip wheel --no-deps -w DIR .`) and run `bash DIR/accept-multigpu.sh DIR`.
# FULL=1: a whole default `accept` (300 s) on a machine of 2+ GPUs, in place of the runs of
# `accept` with phases left out (the ranks and the runner still run first).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
set -u
export PYTHONUNBUFFERED=1
wheels=$(cd "${1:-.whl}" && pwd)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$wheels"/*.whl || exit 1
export PYTHONPATH=/tmp/site
cd /tmp || exit 1
sc() { python3 -m sitscheck "$@"; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
mem() { nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tr '\n' ' '; }
rank() { python3 -m sitscheck.probes.nccl "$@"; }
summary() {  # the report's multigpu and bandwidth checks and the NCCL verdicts
  python3 - "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for check in report["checks"]:
    if check["name"] in ("multigpu", "bandwidth"):
        facts = check.get("facts") or {}
        print(" ", check["name"], check["status"], "error:", check.get("error"),
              "skip:", check.get("skip_reason"))
        print("    nccl:", facts.get("nccl"), "| gpus:", facts.get("gpus") if check["name"] == "multigpu" else "")
        for f in check.get("findings") or []:
            print("    finding", f["severity"], f["code"], f["message"][:160])
for v in report.get("verdicts") or []:
    if "nccl" in v["rule"] or v["status"] not in ("ok", "skipped"):
        print("  verdict", v["rule"], v["status"], v["message"][:200])
print("  status", report["status"])
PY
}
n=$(nvidia-smi -L | grep -c '^GPU ')
log=$OUT/multigpu.txt
{
  echo "== environment"; env | grep -E '^(NCCL|NVSHMEM|TORCH_SYMM)' | sort
  nvidia-smi -L; nvidia-smi topo -m
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'devices', torch.cuda.device_count(), 'nccl', torch.cuda.nccl.version())"
  echo "memory before: $(mem)"

  folder=$(mktemp -d)  # 0700, root's
  echo "== a rank alone (world 1, GPU 0)"
  t=$(date +%s%N); CUDA_VISIBLE_DEVICES=0 rank --rank 0 --world 1 --rendezvous "$folder/alone" \
    --seconds 15 > "$OUT/rank-alone.jsonl"; echo "rc=$? $(ms "$t") ms"; tail -2 "$OUT/rank-alone.jsonl"
  echo "== a rank of 2 that sees one GPU"
  CUDA_VISIBLE_DEVICES=0 rank --rank 0 --world 2 --rendezvous "$folder/short" --seconds 5; echo "rc=$?"
  echo "== a rendezvous in a folder others can write"
  CUDA_VISIBLE_DEVICES=0 rank --rank 0 --world 1 --rendezvous /tmp/store --seconds 5; echo "rc=$?"
  rm -rf "$folder"
  echo "memory after the ranks: $(mem)"

  echo "== the phase's runner over every GPU (one GPU: listed twice)"
  t=$(date +%s%N)
  python3 - "$n" > "$OUT/phase.json" <<'PY'
import json, sys, time
from sitscheck.workloads.children import Target
from sitscheck.workloads.gpus import NodeGpus
from sitscheck.accept.multigpu import run_multigpu
from sitscheck.accept.phases import PhaseContext
from sitscheck.accept.plan import PlannedPhase
from sitscheck.sources.nvml import Nvml
nvml = Nvml.load(10.0); nvml.init()
gpus = NodeGpus(nvml)
if len(gpus.targets) == 1:  # the runner's two-rank path on one GPU: the ranks see one device
    gpus.targets.append(Target(1, gpus.targets[0].uuid, gpus.targets[0].pci_bus_id, "listed twice"))
indices = tuple(t.index for t in gpus.targets)
phase = PlannedPhase("multigpu", 0.0, 40.0, 28.0, 0.0, indices)
ctx = PhaseContext(gpus=gpus, began=time.monotonic(), stopped=lambda: False, engine="auto")
print(json.dumps(run_multigpu(phase, ctx), indent=1))
PY
  echo "rc=$? $(ms "$t") ms"
  python3 - "$OUT/phase.json" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
for g in record["gpus"]:
    print("  GPU", g["index"], g["status"], g["reason"], "| doing:", g["doing"], "|", g["seconds"], "s")
print("  result:", record["result"])
nccl = record["result"]["nccl"]
if nccl is not None and nccl["nvls_disabled"] is not True:
    sys.exit("a rank ran with NVLink SHARP allowed: stop")
PY
  [ $? -eq 0 ] || exit 1
  echo "memory after the phase: $(mem)"
} > "$log" 2>&1

quick="--skip memtest --skip compute --skip soak"
{
  if [ "$n" -lt 2 ]; then
    echo "== accept on one GPU: the phase is planned out"
    t=$(date +%s%N); sc accept --budget 60 $quick -o json="$OUT/accept-one.json" -o text \
      > "$OUT/accept-one.txt" 2>&1; echo "rc=$? $(ms "$t") ms"
    head -12 "$OUT/accept-one.txt"; summary "$OUT/accept-one.json"
    exit 0
  fi
  if [ "${FULL:-0}" = 1 ]; then  # alone: with the rest it would outlast a 10-minute call
    echo "== accept, default budget ($n GPUs)"
    t=$(date +%s%N); sc accept --collect "$OUT/accept-full.tar.gz" -o json="$OUT/accept-full.json" \
      -o text > "$OUT/accept-full.txt" 2>&1
    echo "rc=$? $(ms "$t") ms"; head -14 "$OUT/accept-full.txt"; summary "$OUT/accept-full.json"
    exit 0
  fi
  # the multigpu phase is 10 % of the budget and runs from 20 s: a budget of 240 gives it 24 s
  echo "== accept: bandwidth and multigpu phases ($n GPUs)"
  t=$(date +%s%N); sc accept --budget 240 $quick --collect "$OUT/accept-multigpu.tar.gz" \
    -o json="$OUT/accept.json" -o text > "$OUT/accept.txt" 2>&1; echo "rc=$? $(ms "$t") ms"
  head -12 "$OUT/accept.txt"; summary "$OUT/accept.json"
  echo "== replay of the bundle"
  mkdir -p /tmp/b && tar xzf "$OUT/accept-multigpu.tar.gz" -C /tmp/b
  sc run --from /tmp/b -o json="$OUT/replay.json" > /dev/null 2>&1; echo "rc=$?"
  summary "$OUT/replay.json"
  echo "== a rank that never joins (--inject hang:1): the phase ends at its deadline"
  t=$(date +%s%N); sc accept --budget 240 $quick --skip bandwidth --inject hang:1 \
    -o json="$OUT/hang.json" > /dev/null 2>&1; echo "rc=$? $(ms "$t") ms (budget 240 s)"
  summary "$OUT/hang.json"; echo "memory after: $(mem)"
  echo "== SIGTERM in the multigpu phase"
  sc accept --budget 240 $quick --skip bandwidth -o json="$OUT/sigterm.json" > /dev/null 2>&1 &
  # the phase starts after the passive checks' 12 s
  pid=$!; sleep 20; t=$(date +%s%N); kill -TERM "$pid"; wait "$pid"
  echo "rc=$? ended $(ms "$t") ms after SIGTERM; memory after: $(mem)"
  summary "$OUT/sigterm.json"
} >> "$log" 2>&1
