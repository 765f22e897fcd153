#!/usr/bin/env bash
# Live runs on the lent GPU machine: default run timings, --load, timer mode twice, NVML
# parallel sampling with phase timings. Everything lands under $OUT.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
sc() { python3 -m sitscheck "$@"; }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
log=$OUT/log; mkdir -p "$log"
for n in 1 2 3; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" --output text > "$log/run-$n.txt" 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
t=$(date +%s%N); sc run --load -v --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load: rc=$? $(ms $t) ms" >> "$log/timings.txt"
for n in 1 2; do
  t=$(date +%s%N); sc run --daemon --state-dir /tmp/state --output npd > "$log/daemon-$n.txt" 2>&1
  echo "run --daemon #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt"; cat "$log/daemon-2.txt"; head -30 "$log/run-1.txt"; head -40 "$log/run-load.txt"
