#!/usr/bin/env bash
# Second recording on the lent GPU machine: final bundles (idle, --load), run timings,
# the parallel-NVML figure and the benchmarks. Everything lands under $OUT.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
sc() { python3 -m sitscheck "$@"; }
log=$OUT/log; mkdir -p "$log"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
nvidia-smi -L > "$log/L.txt"; nvidia-smi topo -m > "$log/topo.txt" 2>&1
sc checks > "$log/checks.txt" 2>&1
for mode in idle load; do
  extra=""; [ "$mode" = load ] && extra="--load --sample-seconds 5"
  t=$(date +%s%N); sc collect "$OUT/b-$mode" $extra > "$log/collect-$mode.txt" 2>&1
  echo "collect $mode: rc=$? $(ms $t) ms" >> "$log/timings.txt"
  ( cd "$OUT/b-$mode" && tar czf "$OUT/bundle-$mode.tar.gz" . ) && rm -rf "$OUT/b-$mode"
done
for n in 1 2; do
  t=$(date +%s%N); sc run --output json="$log/run-$n.json" --output text > "$log/run-$n.txt" 2>&1
  echo "run (default) #$n: rc=$? $(ms $t) ms" >> "$log/timings.txt"
done
t=$(date +%s%N); sc run --load -v --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load: rc=$? $(ms $t) ms" >> "$log/timings.txt"
t=$(date +%s%N); sc run --check driver --output text > /dev/null 2>&1
echo "run --check driver: rc=$? $(ms $t) ms" >> "$log/timings.txt"
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
python3 -m benchmarks.nvml_parallel 3 >> "$log/timings.txt" 2>&1
BENCH_LOG_MB=1024 BENCH_REPEAT=2 timeout 300 python3 -m benchmarks > "$log/bench.txt" 2>&1
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt" "$log/bench.txt"; cat "$log/run-1.txt" | head -40
