#!/usr/bin/env bash
# Live validation on the lent GPU machine (issue 10): NVML snapshot 1 GPU vs all GPUs,
# default and --load runs, and idle/load bundles for CI replay. Everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L
for n in 1 2 3; do python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1; done
for n in 1 2 3; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" --output text > "$log/run-$n.txt" 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
python3 -m cProfile -o "$log/run.prof" -m sitscheck run -o json="$log/run-prof.json" > /dev/null 2>&1
python3 -c "import pstats; pstats.Stats('$log/run.prof').sort_stats('cumulative').print_stats(45)" \
  > "$log/run-profile.txt" 2>&1
t=$(date +%s%N); sc run --load --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load: rc=$? $(ms $t) ms" >> "$log/timings.txt"
for mode in idle load; do
  extra=""; [ "$mode" = load ] && extra="--load --sample-seconds 5"
  t=$(date +%s%N); sc collect "$OUT/b-$mode" $extra > "$log/collect-$mode.log" 2>&1
  echo "collect $mode: rc=$? $(ms $t) ms" >> "$log/timings.txt"
  ( cd "$OUT/b-$mode" && tar czf "$OUT/h200x2-$mode.tar.gz" . ) && rm -rf "$OUT/b-$mode"
done
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt"; head -60 "$log/run-profile.txt" | tail -48; head -16 "$log/run-1.txt"; head -16 "$log/run-load.txt"
python3 - "$log/run-1.json" "$log/run-load.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path, r.get('duration_s'), [(c['name'], c['duration_s'], c['status']) for c in r['checks']])
PY
