#!/usr/bin/env bash
# Final live validation on the lent GPU machine: default runs, --load, NVML parallel sampling.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
sc() { python3 -m sitscheck "$@"; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
log=$OUT/log; mkdir -p "$log"
nvidia-smi -L | head -8
for n in 1 2 3; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" --output text > "$log/run-$n.txt" 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
t=$(date +%s%N); sc run --load --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load: rc=$? $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); sc --version > /dev/null; echo "--version: $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); sc checks > /dev/null; echo "checks: $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); python3 -c pass; echo "python -c pass: $(ms $t) ms" >> "$log/timings.txt"
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt"; head -14 "$log/run-1.txt"; head -3 "$log/run-load.txt"
python3 -c "import json; r=json.load(open('$log/run-1.json')); print(r['duration_s'], [(c['name'], c['duration_s'], c['status']) for c in r['checks']])"
