#!/usr/bin/env bash
# Device (issue 29, item 9): live runs and replays of the installed CLI under an address-space
# limit (`ulimit -v`), the session's starting code (.whl/old) against this tree's: exit code,
# each check's status and error, and the peak address space (VmPeak) of each run. Carry
# `.whl`; all lands under $OUT. `.whl` holds the dependencies' cp312 wheels the image lacks
# (`pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64
# --platform manylinux_2_28_x86_64 -d .whl msgspec cel-expr-python ahocorasick-rs
# opentelemetry-api opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
# opentelemetry-proto`), this tree's wheel (`pip wheel --no-deps . -w .whl`) and, in
# .whl/old, the wheel of the code to compare with.
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nproc; python3 --version
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site-old .whl/old/*.whl || exit 1
python3 -m compileall -q -j 0 /tmp/site-old > /dev/null
# `sitscheck ARGS` as its entry point runs it, printing its VmPeak (KiB) on stderr at exit
peak() {
  python3 -c 'import atexit, sys
def vm():
    for l in open("/proc/self/status"):
        if l.startswith("VmPeak"): sys.stderr.write("VMPEAK " + l.split()[1] + "\n")
atexit.register(vm)
sys.argv = ["sitscheck", *sys.argv[1:]]
from sitscheck.__main__ import main
main()' "$@"
}
summary() {  # FILE.json ERR: status, exit code, the checks not ok/skipped and why, VmPeak
  python3 - "$@" <<'PY'
import json, sys
path, err, rc = sys.argv[1:4]
text = open(err).read()
vm = [l.split()[1] for l in text.splitlines() if l.startswith("VMPEAK")]
try:
    r = json.load(open(path))
except Exception:
    print(f"  rc={rc} NO REPORT; stderr: {text.strip()[-300:]!r}")
    raise SystemExit
bad = [(c["name"], c["status"], (c.get("error") or "")[:100]) for c in r["checks"]
       if c["status"] not in ("ok", "skipped")]
print(f"  rc={rc} {r['status']} VmPeak={vm[-1] if vm else '?'} KiB not-ok={bad}")
PY
}
for code in old new; do
  site=/tmp/site; [ $code = old ] && site=/tmp/site-old:/tmp/site
  for lim in unlimited 1000000 600000; do
    for what in live replay; do
      for n in 1 2; do
        args="run"; [ $what = replay ] && args="run --from tests/bundles/h200x2-idle-v1"
        out="$log/$code-$what-$lim-$n"
        (
          [ $lim != unlimited ] && ulimit -v $lim
          PYTHONPATH=$site:$PWD peak $args -o json="$out.json" > /dev/null 2> "$out.err"
          echo $? > "$out.rc"
        )
        echo "$code $what ulimit -v $lim #$n:"
        summary "$out.json" "$out.err" "$(cat $out.rc)"
      done
    done
  done
done 2>&1 | tee "$log/summary.txt"
( cd "$log" && tar czf "$OUT/logs.tar.gz" . )
