#!/usr/bin/env bash
# Device (issue 19, round 5): the installed CLI on a real GPU node with the compiled-rule and
# parsed-file caches (engine/program_cache.py, engine/tree_cache.py): start-up, live runs
# (wall, peak RSS), --load --bandwidth and `python -m benchmarks`; then, with AB=1, the same
# rows (replay, storm, the 100k-line log) for the session's starting code (.whl/old, main at
# 9209c4f) and this tree's, alternately, in one lease (the leases differ more than the code).
# Carry `.whl`; all lands under $OUT.
. tools/device/setup.sh
echo "HOME=${HOME:-unset} XDG_CACHE_HOME=${XDG_CACHE_HOME:-unset}"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
. tools/device/wall_rss.sh
if [ "${AB:-0}" = 1 ]; then
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
  exit 0
fi
{
  for n in 1 2 3; do wall_rss "python -c pass" python3 -c pass; done
  for n in 1 2 3; do wall_rss "sitscheck checks" python3 -m sitscheck checks; done
  for n in 1 2 3 4; do wall_rss "live run (default)" python3 -m sitscheck run -o "json=$log/run-$n.json"; done
} | tee "$log/timings.txt"
ls -la "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/sitscheck" 2>&1 | tee -a "$log/timings.txt"
sc run --output text > "$log/run-text.txt" 2>&1; echo "text run rc=$?" >> "$log/timings.txt"
t=$(date +%s%N); sc run --load --bandwidth --output json="$log/run-load.json" --output text > "$log/run-load.txt" 2>&1
echo "run --load --bandwidth: rc=$? $(ms $t) ms" | tee -a "$log/timings.txt"
python3 - "$log/run-1.json" "$log/run-load.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path.rsplit("/", 1)[-1], r["status"], [(c["name"], c["status"]) for c in r["checks"]])
    for c in r["checks"]:
        if c["name"] in ("gpu_telemetry", "bandwidth"):
            for g in c["facts"].get("gpus", []):
                print(" ", c["name"], {k: g.get(k) for k in ("power_w", "clock_reasons",
                      "sm_clock_mhz", "h2d_gbs", "d2h_gbs", "local_gbs")})
    print("  not ok:", [v["rule"] + ":" + v["status"] for v in r["verdicts"] if v["status"] != "ok"])
PY
BENCH_ONLY=${BENCH_GROUPS:-startup,live,replay,whole,kernlog,russian,storm} BENCH_REPEAT=3 \
  timeout 420 python3 -m benchmarks > "$log/benchmarks.txt" 2>&1
echo "benchmarks rc=$?" >> "$log/benchmarks.txt"
cat "$log/benchmarks.txt"; head -30 "$log/run-text.txt"
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
