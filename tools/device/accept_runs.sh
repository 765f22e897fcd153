#!/usr/bin/env bash
# Default `sitscheck accept` runs one after the other on the lent GPU machine (docs/ACCEPTANCE.md,
# "three runs in a row"): RUNS="1 2" (two fit in one 600 s call), then RUNS="3" right after.
# Each writes runN.json, runN.html and runN.txt under $OUT, and prints its wall time and exit
# code with the GPU's memory in use, temperature and power before it. BUDGET=S: `--budget S`.
# WORKLOADS=1 first proves `run --load --bandwidth` on the declared workloads (issue 30: the
# soak's GEMM keeps every GPU busy through the window, run by accept's own child runner, then
# the bandwidth check's workload): its exit code, the load's children as `ps` saw them, each
# GPU's utilisation, power, SM clock and clock-event reasons over the window, the bandwidth
# figures, and each GPU's memory in use before and after (back at the baseline, no process
# left on a GPU). Issue 30's proof in one call: WORKLOADS=1 BUDGET=90 RUNS=1.
source tools/device/setup.sh
mem() { nvidia-smi --query-gpu=memory.used,temperature.gpu,power.draw --format=csv,noheader,nounits | tr -d ' '; }
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | tr -d ' ' | tr '\n' ' '; }
apps() { nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';'; }
if [ "${WORKLOADS:-0}" = 1 ]; then
  before=$(used); echo "run --load --bandwidth: memory used before (MiB): $before apps: [$(apps)]"
  ( for _ in $(seq 60); do ps -eo pid,sid,args | grep '[s]itscheck.probes' | cut -c1-160; sleep 1; done ) \
    > $log/ps.txt & watcher=$!
  s=$(date +%s%N)
  sc run --load --bandwidth -o json=$OUT/load.json -o text > $OUT/load.txt 2>&1
  echo "run --load --bandwidth rc=$? ms=$(ms $s)"
  kill $watcher 2>/dev/null; wait $watcher 2>/dev/null
  echo "the workload children it started (pid sid args):"; sort -u -k1,1 $log/ps.txt
  sleep 1; after=$(used); echo "memory used after (MiB): $after apps: [$(apps)]"
  python3 - "$OUT/load.json" "$before" "$after" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("status", r["status"], r["headline"], "above ok:",
      [(v["rule"], v["status"], v["message"]) for v in r["verdicts"] if v["status"] not in ("ok", "skipped")])
for c in r["checks"]:
    if c["name"] == "gpu_telemetry":
        print("gpu_telemetry", c["status"], c.get("error"))
        for g in c["facts"].get("gpus", []):
            mean = {k: (g.get(k) or {}).get("mean") for k in ("util_gpu_pct", "power_w", "sm_clock_mhz", "temp_c")}
            print("  GPU", g["index"], "mean", mean, "limit", g.get("power_limit_w"),
                  "sm min", (g.get("sm_clock_mhz") or {}).get("min"), "reasons", g.get("clock_reasons_seen"))
    if c["name"] == "bandwidth":
        print("bandwidth", c["status"], c.get("error"))
        for g in c["facts"].get("gpus", []):
            print("  GPU", g["index"], {k: g.get(k) for k in ("h2d_gbs", "d2h_gbs", "hbm_gbs")})
before, after = (list(map(int, a.split())) for a in sys.argv[2:4])
print("memory back at the baseline (within 64 MiB):",
      [a <= b + 64 for b, a in zip(before, after)], before, after)
PY
fi
for n in ${RUNS:-1}; do
  echo "before run$n: mem,temp,power=$(mem) at $(date -u +%T)"
  s=$(date +%s%N)
  sc accept ${BUDGET:+--budget $BUDGET} -o json=$OUT/run$n.json -o html=$OUT/run$n.html -o text > $OUT/run$n.txt 2>&1
  echo "run$n rc=$? ms=$(ms $s)"; head -3 $OUT/run$n.txt
done
echo "end: mem,temp,power=$(mem)"
