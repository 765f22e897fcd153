#!/usr/bin/env bash
# Device (issue 19, round 5): the round of round4.sh (start-up, live runs with their peak RSS,
# --load --bandwidth, `python -m benchmarks`) with four live runs; with AB=1 instead, the rows
# the fixed cost moves (replay, storm, the 100k-line log) for the session's starting code
# (.whl/old) and this tree's, alternately, in one lease (the leases differ more than the code).
# Carry `.whl`; all lands under $OUT.
if [ "${AB:-0}" != 1 ]; then
  LIVE_RUNS=${LIVE_RUNS:-4} exec bash tools/device/round4.sh
fi
. tools/device/setup.sh
echo "HOME=${HOME:-unset} XDG_CACHE_HOME=${XDG_CACHE_HOME:-unset}"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site-old .whl/old/*.whl || exit 1
python3 -m compileall -q -j 0 /tmp/site-old > /dev/null
for round in 1 2; do
  for code in old new; do
    site=/tmp/site; [ $code = old ] && site=/tmp/site-old:/tmp/site
    echo "== $code (round $round)"
    PYTHONPATH=$site:$PWD BENCH_ONLY=replay,kernlog,storm BENCH_LOG_MB=64 BENCH_REPEAT=3 \
      timeout 200 python3 -m benchmarks 2>&1 | grep -E "replay|100k|storm"
  done
done | tee "$log/ab.txt"
