#!/usr/bin/env bash
# Device (this round's validation): the installed CLI on a real GPU node with the new check
# contract: start-up, live runs (default, --load --bandwidth), peak RSS of a whole live run,
# the live benchmark rows, and a bundle recorded with every declared piece of evidence.
# Carry `.whl` (the dependencies' wheels and this tree's own); everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
for what in "--version" "checks"; do
  for n in 1 2 3; do t=$(date +%s%N); sc $what > /dev/null; echo "sitscheck $what: $(ms $t) ms" >> "$log/timings.txt"; done
done
for n in 1 2 3; do t=$(date +%s%N); python3 -c pass; echo "python -c pass: $(ms $t) ms" >> "$log/timings.txt"; done
for n in 1 2 3; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" --output text > "$log/run-$n.txt" 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
python3 - <<'PY' >> "$log/timings.txt"
import resource, subprocess, sys, time
t = time.monotonic()
done = subprocess.run([sys.executable, "-m", "sitscheck", "run", "-o", "json=/dev/null"])
print(f"whole live run: rc={done.returncode} {time.monotonic() - t:.2f} s, peak RSS "
      f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f} MB")
PY
t=$(date +%s%N); sc run --load --bandwidth --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load --bandwidth: rc=$? $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); sc collect --bandwidth "$OUT/b" > "$log/collect.log" 2>&1
echo "collect --bandwidth: rc=$? $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); sc run --from "$OUT/b" --output text > "$log/replay.txt" 2>&1
echo "replay of it: rc=$? $(ms $t) ms" >> "$log/timings.txt"
( cd "$OUT/b" && tar czf "$OUT/h200x1-v3.tar.gz" . ) && rm -rf "$OUT/b"
BENCH_ONLY=live,startup BENCH_REPEAT=3 timeout 200 python3 -m benchmarks > "$log/benchmarks.txt" 2>&1
echo "benchmarks rc=$?" >> "$log/benchmarks.txt"
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt" "$log/benchmarks.txt"; head -40 "$log/run-1.txt"; head -40 "$log/run-load.txt"
python3 - "$log/run-load.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("load:", r["status"], [(c["name"], c["status"]) for c in r["checks"]])
for c in r["checks"]:
    if c["name"] in ("gpu_telemetry", "bandwidth"):
        for g in c["facts"].get("gpus", []):
            print(c["name"], {k: g.get(k) for k in ("power_w", "clock_reasons", "sm_clock_mhz",
                  "h2d_gbs", "d2h_gbs", "local_gbs", "energy_window_j", "memory_used_bytes")})
print([v["rule"] + ":" + v["status"] for v in r["verdicts"] if v["status"] != "ok"])
PY
