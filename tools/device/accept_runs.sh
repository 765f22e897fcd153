#!/usr/bin/env bash
# Default `sitscheck accept` runs one after the other on the lent GPU machine (docs/ACCEPTANCE.md,
# "three runs in a row"): RUNS="1 2" (two fit in one 600 s call), then RUNS="3" right after.
# Each writes runN.json, runN.html and runN.txt under $OUT, and prints its wall time and exit
# code with the GPU's memory in use, temperature and power before it.
source tools/device/setup.sh
mem() { nvidia-smi --query-gpu=memory.used,temperature.gpu,power.draw --format=csv,noheader,nounits | tr -d ' '; }
for n in ${RUNS:-1}; do
  echo "before run$n: mem,temp,power=$(mem) at $(date -u +%T)"
  s=$(date +%s%N)
  sc accept -o json=$OUT/run$n.json -o html=$OUT/run$n.html -o text > $OUT/run$n.txt 2>&1
  echo "run$n rc=$? ms=$(ms $s)"; head -3 $OUT/run$n.txt
done
echo "end: mem,temp,power=$(mem)"
