#!/usr/bin/env bash
# Device (issue 19, round 6): round5.sh's round (start-up, four live runs, --load --bandwidth,
# `python -m benchmarks`), then its A/B (AB=1: .whl/old is the session's starting code, before
# the kernel log's pre-filter worker), then where a live run's time beyond its window goes:
# cProfile and -X importtime of one default live run. Carry `.whl`; all lands under $OUT.
set -u
bash tools/device/round5.sh > "$OUT/round.txt" 2>&1
echo "round rc=$?"
grep -E "^(start-up|replay|whole|footprint|daemon|kernel|live)|rc=" "$OUT/round.txt"
AB=1 bash tools/device/round5.sh 2>&1 | grep -E "^==|replay|100k|storm" | tee "$OUT/ab.txt"
export PYTHONPATH=/tmp/site:$PWD
python3 -m cProfile -o "$OUT/live.prof" -m sitscheck run -o json=/dev/null > /dev/null 2>&1
python3 -X importtime -m sitscheck run -o json=/dev/null 2> "$OUT/live-importtime.txt" > /dev/null
python3 - "$OUT/live.prof" <<'PY'
import pstats, sys
s = pstats.Stats(sys.argv[1])
s.sort_stats("cumulative").print_stats(45)
PY
sort -t'|' -k2 -n "$OUT/live-importtime.txt" | tail -25
