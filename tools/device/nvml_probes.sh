#!/usr/bin/env bash
# What NVML itself answers on the lent GPU node, raw through pynvml: the batched field values
# against the per-link calls and each call's latency (nvml_fields_probe.py), the readings
# gpu_telemetry takes (nvml_readings_probe.py), and NVML sampling of one GPU vs all. Rerun
# before a check reads a new NVML value, or after a driver upgrade. Carry `.whl` (setup.sh);
# everything lands under $OUT.
. tools/device/setup.sh
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
python3 tools/device/nvml_fields_probe.py > "$OUT/fields.json" 2>&1; echo "fields probe rc=$?"
python3 tools/device/nvml_readings_probe.py > "$OUT/readings.json" 2>&1; echo "readings probe rc=$?"
for _ in 1 2; do python3 -m benchmarks.nvml_parallel 3 2>&1; done | tee "$OUT/nvml_parallel.txt"
cat "$OUT/readings.json"
