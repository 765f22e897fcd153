#!/usr/bin/env bash
# Issue 22 on the lent GPU machine: the bandwidth probe by itself (figures, wall time, copy
# size, SIGTERM and deadline stops, memory left behind), then `sitscheck collect --bandwidth`
# (the bundle kept under tests/bundles) and live runs with --bandwidth and --load.
# Everything lands under $OUT. Run from the repository root: bash tools/device/bandwidth.sh
# (carry `.whl`: the dependencies' wheels setup.sh installs plus this tree's own, made by
# `pip wheel --no-deps -w .whl .`; where the checkout that travels is not this one, copy this
# script and bandwidth_paths.py into .whl/ and run `bash .whl/bandwidth.sh`).
here=$(cd "$(dirname "$0")" && pwd)  # tools/device, or the folder the script was carried in
. tools/device/setup.sh
bw() { python3 -m sitscheck.probes.bandwidth "$@"; }
used() { nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | tr '\n' ' '; }
{
  nvidia-smi -L; nvidia-smi --query-gpu=index,name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv
  echo "memory used before: $(used)"
  for n in 1 2 3; do
    t=$(date +%s%N); bw --deadline-s 20 > "$log/probe-$n.json"; rc=$?
    echo "probe #$n (256 MiB): rc=$rc wall $(ms "$t") ms"
  done
  t=$(date +%s%N); bw --deadline-s 0.3 > "$log/probe-deadline.json"; rc=$?
  echo "probe --deadline-s 0.3: rc=$rc wall $(ms "$t") ms"
  # SIGTERM while measuring: python itself in the background (a function would fork a shell)
  python3 -m sitscheck.probes.bandwidth --deadline-s 20 --mib 1024 --samples 50 \
    > "$log/probe-sigterm.json" & pid=$!
  sleep 1.5
  t=$(date +%s%N); kill -TERM "$pid"; wait "$pid"; rc=$?
  echo "probe SIGTERM: rc=$rc, exited $(ms "$t") ms after the signal"
  echo "memory used after SIGTERM: $(used)"
  for ways in 2 8; do  # the several-GPU code paths, on the one GPU opened WAYS times
    t=$(date +%s%N); python3 "$here/bandwidth_paths.py" "$ways" > "$OUT/paths-$ways.json"
    echo "bandwidth_paths.py $ways: rc=$? wall $(ms "$t") ms"
  done
} > "$OUT/probe.txt" 2>&1
python3 - "$log"/probe-*.json >> "$OUT/probe.txt" 2>&1 <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(path.rsplit("/", 1)[-1], "elapsed", r["elapsed_s"], "phases", r["phases_s"],
          "stopped", r["stopped"], "errors", r["errors"])
    for g in r["gpus"]:
        print("  GPU", g["ordinal"], g["pci_bus_id"], "setup", g.get("setup_s"),
              {k: g[k]["gbs"] for k in ("h2d", "d2h", "local_ce", "local_kernel") if k in g},
              "hbm", g.get("hbm_gbs"), "verified", g.get("local_verified"), g.get("error"))
PY
for mode in bandwidth load; do
  t=$(date +%s%N)
  sc collect "$log/b-$mode" --"$mode" > "$log/collect-$mode.log" 2>&1
  echo "collect --$mode: rc=$? $(ms "$t") ms" >> "$OUT/probe.txt"
  ( cd "$log/b-$mode" && tar czf "$OUT/h200-$mode.tar.gz" . )
done
for args in "--bandwidth" "--load" "--bandwidth --check bandwidth"; do
  name=$(echo "$args" | tr -d ' -')
  t=$(date +%s%N)
  sc run $args --output json="$log/run-$name.json" --output text > "$log/run-$name.txt" 2>&1
  echo "run $args: rc=$? $(ms "$t") ms" >> "$OUT/probe.txt"
done
t=$(date +%s%N); sc run --from "$log/b-bandwidth" > "$log/replay.txt" 2>&1
echo "replay of the new bundle: rc=$? $(ms "$t") ms" >> "$OUT/probe.txt"
python3 - "$log"/run-*.json >> "$OUT/probe.txt" 2>&1 <<'PY'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    c = next(c for c in r["checks"] if c["name"] == "bandwidth")
    print(path.rsplit("/", 1)[-1], r["status"], r["duration_s"], "bandwidth:", c["status"],
          c["duration_s"], c.get("error"), [(g["index"], g["h2d_gbs"], g["d2h_gbs"], g["hbm_gbs"])
          for g in c["facts"].get("gpus", [])], c["facts"].get("probe", {}).get("elapsed_s"))
    print("  above ok:", [(v["rule"], v["message"]) for v in r["verdicts"]
          if v["status"] not in ("ok", "skipped")])
PY
( cd "$log" && tar czf "$OUT/log.tar.gz" . )
cat "$OUT/probe.txt"; cat "$log/run-bandwidthcheckbandwidth.txt"
