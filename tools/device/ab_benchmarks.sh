#!/usr/bin/env bash
# `python -m benchmarks` rows for two versions in one lease, alternated (two leases differ
# more than two versions of the code): the code to compare with (its wheel in .whl/old) and
# this tree's. Rerun before merging a change meant to make a row faster or to keep it bounded.
# Carry `.whl` (setup.sh) with the other wheel in .whl/old; everything lands under $OUT.
#   BENCH_ONLY  the benchmark groups (replay,kernlog,storm)   BENCH_LOG_MB  (64)   ROUNDS (2)
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site-old .whl/old/*.whl || exit 1
python3 -m compileall -q -j 0 /tmp/site-old > /dev/null
for round in $(seq "${ROUNDS:-2}"); do
  for code in old new; do
    site=/tmp/site; [ $code = old ] && site=/tmp/site-old:/tmp/site
    echo "== $code (round $round)"
    PYTHONPATH=$site:$PWD BENCH_ONLY=${BENCH_ONLY:-replay,kernlog,storm} \
      BENCH_LOG_MB=${BENCH_LOG_MB:-64} BENCH_REPEAT=3 timeout 200 python3 -m benchmarks 2>&1
  done
done | tee "$log/ab.txt"
