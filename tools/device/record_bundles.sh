#!/usr/bin/env bash
# Record real-node evidence on the lent GPU node for CI replay: raw command outputs (env,
# `nvidia-smi`, `topo -m` piped and on a tty, `topo -p2p r`, `-q`), bundles of the idle node,
# under load and with the bandwidth probe (`sitscheck collect`), each replayed once, and live
# runs. Rerun to record a new driver, GPU or node shape as tests/bundles/<name>.
# Carry `.whl` (setup.sh); everything lands under $OUT.
. tools/device/setup.sh
raw=$OUT/raw; mkdir -p "$raw"
{
  uname -a; nvidia-smi; nvidia-smi -L
  echo "--- kmsg"; head -c 300 /dev/kmsg 2>&1 | head -3 || true
  echo "--- dmesg"; dmesg 2>&1 | tail -5
  echo "--- sysfs"
  for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/vendor")" = 0x10de ]; then
      echo "$d -> $(readlink -f "$d")"; ls "$d" | tr '\n' ' '; echo
      for f in current_link_speed current_link_width max_link_speed max_link_width aer_dev_correctable; do
        printf '%s=%s\n' "$f" "$(tr '\n' ' ' < "$d/$f" 2>&1)"; done
    fi
  done
} > "$raw/env.txt" 2>&1
nvidia-smi topo -m > "$raw/topo-m.txt" 2>&1
nvidia-smi topo -p2p r > "$raw/topo-p2p-r.txt" 2>&1
script -qc "nvidia-smi topo -m" /dev/null > "$raw/topo-m-tty.txt" 2>&1 || true
nvidia-smi -q > "$raw/q.txt" 2>&1
( cd "$raw" && tar czf "$OUT/raw.tar.gz" . ) && rm -rf "$raw"
for mode in idle load bandwidth; do
  case $mode in
    idle) extra="" ;;
    load) extra="--load --sample-seconds 5" ;;
    bandwidth) extra="--bandwidth" ;;
  esac
  t=$(date +%s%N); sc collect "$OUT/b-$mode" $extra > "$OUT/collect-$mode.log" 2>&1
  echo "collect $mode: rc=$? $(ms $t) ms" >> "$OUT/timings.txt"
  t=$(date +%s%N); sc run --from "$OUT/b-$mode" --output text > "$OUT/replay-$mode.txt" 2>&1
  echo "replay of it: rc=$? $(ms $t) ms" >> "$OUT/timings.txt"
  ( cd "$OUT/b-$mode" && tar czf "$OUT/h200-$mode.tar.gz" . ) && rm -rf "$OUT/b-$mode"
done
for args in "" "--load"; do
  t=$(date +%s%N)
  sc run $args --output json="$OUT/run$args.json" --output text > "$OUT/run$args.txt" 2>&1
  echo "run $args: rc=$? $(ms $t) ms" >> "$OUT/timings.txt"
done
cat "$OUT/timings.txt"; cat "$OUT/run.txt"
