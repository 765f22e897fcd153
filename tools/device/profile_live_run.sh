#!/usr/bin/env bash
# Where a live run's time beyond its sampling window goes, on the lent GPU node: the raw quick
# check's commands, default live runs (wall, peak RSS), a timeline of each run's calls on every
# thread (timeline.py), a cProfile of every thread, an import-time profile, replays of the
# recorded 1-GPU bundles. Rerun when a live run or a replay
# got slower and it is not clear where. Carry `.whl` (setup.sh; with .whl/old/*.whl, the code
# to compare with, sitscheck alone, the two run interleaved); everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
nproc; python3 --version
T=tools/device/timeline.py
. tools/device/wall_rss.sh
# With .whl/old/*.whl (the code before, sitscheck alone): before and after interleaved, in one
# run, on the same node; the dependencies are the same wheels.
if ls .whl/old/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/old \
    .whl/old/*.whl && python3 -m compileall -q -j 0 /tmp/old > /dev/null
fi
versions() { [ -d /tmp/old ] && echo "before after" || echo "after"; }
as() { if [ "$1" = before ]; then PYTHONPATH=/tmp/old:/tmp/site:$PWD; else PYTHONPATH=/tmp/site:$PWD; fi; }
{
  for n in 1 2 3; do wall_rss "python -c pass" python3 -c pass; done
  for n in 1 2 3; do
    t=$(date +%s%N)
    nvidia-smi topo -m > /dev/null; nvidia-smi dmon -s u -c 1 > /dev/null
    nvidia-smi --query-gpu=index,name,pci.bus_id,temperature.gpu,power.draw,utilization.gpu \
      --format=csv > /dev/null; dmesg 2>/dev/null | grep -cE 'AER|Xid|SXid' > /dev/null
    echo "raw quick check #$n: $(ms $t) ms"
  done
  for n in 1 2 3 4; do
    for v in $(versions); do
      as $v; PYTHONPATH=$PYTHONPATH wall_rss "$v: live run (default) #$n" python3 -m sitscheck run -o json=/dev/null
    done
  done
  for b in tests/bundles/h200x1-v3 tests/bundles/h200x1-idle-v2 examples/h200x2-idle; do
    for n in 1 2 3; do
      for v in $(versions); do
        as $v; PYTHONPATH=$PYTHONPATH wall_rss "$v: replay $b #$n" python3 -m sitscheck run --from $b -o json=/dev/null
      done
    done
  done
  for b in tests/bundles/h200x1-v3 tests/bundles/h200x1-idle-v2; do  # the same report?
    for v in $(versions); do
      as $v; PYTHONPATH=$PYTHONPATH python3 -m sitscheck run --from $b -o json="$log/$v-$(basename $b).json" > /dev/null 2>&1
    done
  done
} > "$log/timings.txt" 2>&1
export PYTHONPATH=/tmp/site:$PWD
for n in 1 2 3; do python3 $T -- run -o json="$log/live-$n.json" > /dev/null 2> "$log/timeline-live-$n.txt"; done
python3 $T -- run --from tests/bundles/h200x1-v3 -o json=/dev/null > /dev/null 2> "$log/timeline-replay-v3.txt"
python3 $T --cprofile "$log/live.pstats" -- run -o json=/dev/null > /dev/null 2> "$log/timeline-cprofile.txt"
python3 - "$log/live.pstats" > "$log/cprofile-live.txt" <<'PY'
import pstats, sys
s = pstats.Stats(sys.argv[1])
s.sort_stats("cumulative").print_stats(90)
s.sort_stats("tottime").print_stats(50)
PY
python3 -X importtime -m sitscheck run -o json=/dev/null 2> "$log/importtime-live.txt" > /dev/null
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
cat "$log/timings.txt" "$log/timeline-live-2.txt"
head -60 "$log/cprofile-live.txt"
