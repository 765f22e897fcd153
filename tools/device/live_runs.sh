#!/usr/bin/env bash
# The installed CLI on the lent GPU node: start-up (`python -c pass`, `sitscheck checks`), the
# default live run (wall time, peak RSS), a text run, `run --load --bandwidth`, NVML sampling
# of one GPU vs all (benchmarks.nvml_parallel); `ab_benchmarks.sh` runs `python -m benchmarks`.
# Rerun after a change that touches start-up, a live run's fixed cost or its memory.
# Carry `.whl` (setup.sh); everything lands under $OUT.
#   LIVE_RUNS     default live runs timed (3)
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
. tools/device/wall_rss.sh
{
  for n in 1 2 3; do wall_rss "python -c pass" python3 -c pass; done
  for n in 1 2 3; do wall_rss "sitscheck checks" python3 -m sitscheck checks; done
  for n in $(seq "${LIVE_RUNS:-3}"); do
    wall_rss "live run (default)" python3 -m sitscheck run -o "json=$log/run-$n.json"
  done
} | tee "$log/timings.txt"
sc run --output text > "$log/run-text.txt" 2>&1; echo "text run rc=$?" >> "$log/timings.txt"
t=$(date +%s%N); sc run --load --bandwidth --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load --bandwidth: rc=$? $(ms $t) ms" | tee -a "$log/timings.txt"
python3 - "$log/run-1.json" "$log/run-load.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path.rsplit("/", 1)[-1], r["status"], [(c["name"], c["status"]) for c in r["checks"]])
    for c in r["checks"]:
        if c["name"] in ("gpu_telemetry", "bandwidth"):
            for g in c["facts"].get("gpus", []):
                print(" ", c["name"], {k: g.get(k) for k in ("power_w", "clock_reasons",
                      "sm_clock_mhz", "h2d_gbs", "d2h_gbs", "hbm_gbs")})
    print("  not ok:", [v["rule"] + ":" + v["status"] for v in r["verdicts"] if v["status"] != "ok"])
PY
python3 -m benchmarks.nvml_parallel 3 2>&1 | tee -a "$log/timings.txt"
head -30 "$log/run-text.txt"
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
