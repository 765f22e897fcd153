#!/usr/bin/env bash
# Device (issue 'readings'): raw NVML answers for memory, energy and NVLink throughput
# (readings_probe.py), `sitscheck run` idle and `--load` with their new readings, and an idle
# bundle for CI replay. Everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L
python3 tools/device/readings_probe.py > "$OUT/probe.json" 2>&1; echo "probe rc=$?"
for args in "" "--load"; do
  t=$(date +%s%N)
  sc run $args --output json="$log/run$args.json" --output text > "$log/run$args.txt" 2>&1
  echo "run $args: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
t=$(date +%s%N); sc collect "$OUT/b-idle" > "$log/collect-idle.log" 2>&1
echo "collect idle: rc=$? $(ms $t) ms" >> "$log/timings.txt"
( cd "$OUT/b-idle" && tar czf "$OUT/h200x1-idle.tar.gz" . ) && rm -rf "$OUT/b-idle"
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$OUT/probe.json" "$log/timings.txt"; head -30 "$log/run.txt"; head -30 "$log/run--load.txt"
python3 - "$log/run.json" "$log/run--load.json" <<'PY'
import json, sys
keys = ("memory_used_bytes", "memory_total_bytes", "memory_reserved_bytes", "energy_total_j",
        "energy_window_j", "nvlink_rx_bytes_per_s", "nvlink_tx_bytes_per_s",
        "nvlink_throughput_source", "power_w", "util_gpu_pct")
for path in sys.argv[1:]:
    r = json.load(open(path))
    t = next(c for c in r["checks"] if c["name"] == "gpu_telemetry")
    print(path.rsplit("/", 1)[-1], r["status"], t["status"], t.get("error"))
    for g in t["facts"]["gpus"]:
        print({k: g.get(k) for k in keys})
    print("not_judged:", t.get("not_judged"))
    print([v["rule"] + ":" + v["status"] for v in r.get("verdicts", []) if v["status"] != "ok"])
PY
