#!/usr/bin/env bash
# Device (issue 19, round 6, last): the final main's rows that the pre-filter worker and the
# RSS sampler (sitscheck's own processes summed) change, `python -m benchmarks` twice in one
# lease. Carry `.whl`; all lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
for round in 1 2; do
  echo "== round $round"
  BENCH_ONLY=startup,replay,kernlog,russian,storm,live BENCH_REPEAT=3 timeout 280 python3 -m benchmarks 2>&1
done | tee "$log/benchmarks.txt"
