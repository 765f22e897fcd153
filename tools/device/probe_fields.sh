#!/usr/bin/env bash
# Device: NVML field-value probe and the NVML sampling benchmark of the installed wheel.
. tools/device/setup.sh
nvidia-smi -L
python3 tools/device/nvml_fields_probe.py > "$OUT/probe.json" 2>&1; echo "probe rc=$?"
python3 -m benchmarks.nvml_parallel 3 2>&1
python3 -m benchmarks.nvml_parallel 3 2>&1
