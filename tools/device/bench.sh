#!/usr/bin/env bash
# The benchmarks on the lent GPU machine's CPU (issue 10: `python -m benchmarks`, 1 GB kernel
# log) and live default runs with byte-compiled modules. Everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L
BENCH_LOG_MB=1024 BENCH_REPEAT=3 python3 -m benchmarks > "$log/benchmarks.txt" 2>&1
echo "benchmarks rc=$?" >> "$log/benchmarks.txt"
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
for n in 1 2 3; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" > /dev/null 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
for what in "--version" "checks"; do
  for n in 1 2 3; do t=$(date +%s%N); sc $what > /dev/null; echo "sitscheck $what: $(ms $t) ms" >> "$log/timings.txt"; done
done
for n in 1 2 3; do t=$(date +%s%N); python3 -c pass; echo "python -c pass: $(ms $t) ms" >> "$log/timings.txt"; done
python3 - "$log"/run-*.json >> "$log/timings.txt" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path.rsplit('/', 1)[-1], r['duration_s'], max(c['duration_s'] for c in r['checks']), r['status'])
PY
cat "$log/benchmarks.txt" "$log/timings.txt"
