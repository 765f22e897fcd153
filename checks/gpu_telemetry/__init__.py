"""`gpu_telemetry`: what every GPU did over the sampling window.

Reads the NVML snapshot's samples (all GPUs sampled concurrently over `--sample-seconds`):
utilization (GPU and memory), GPM metrics on Hopper and newer (SM utilization, SM occupancy,
tensor activity, DRAM bandwidth utilization), power draw and the enforced limit, SM and memory
clocks against their maxima, clock event reasons (bits decoded: idle, SW power cap, HW
slowdown, SW/HW thermal, power brake, ...), GPU and memory temperatures against NVML's
thresholds, and the cumulative violation times (end minus start of the window); memory used
and its size (`nvmlDeviceGetMemoryInfo` v2, the driver's reserved memory apart), the energy
counter (mJ since the driver loaded, and its growth over the window), and NVLink throughput
over every link per direction (GPM's NVLINK_TOTAL_RX/TX, else the NVLink throughput counters
read at both ends of the window). Without NVML, the `nvidia-smi --query-gpu` CSV row (one
sample) and `dmon` rows stand in, and what they do not print is listed in `not_judged`; a
bundle recorded before a reading existed says "not recorded", never zero.

Reports min/mean/p95/max per GPU as facts (`gpu.gpu_telemetry.power_w.mean`, ...) and as
metrics (`hw.gpu.utilization`, `hw.power`, `hw.temperature`, `hw.gpu.memory.usage`,
`sitscheck.gpu.*`, label `stat`); `hw.gpu.memory.limit` and the counter `hw.energy` once.

Decides nothing by itself: every judgement here needs a number (when a GPU counts as busy, how
far from the limit power may be, the fallback slowdown temperature), so the rules in
`rules/gpu-health.yaml` decide: HW slowdown / HW thermal / power brake while busy; temperature
at or past the slowdown point; 0 W while busy; power beyond the limit; power far below the TDP
while busy; NVLink traffic past 85 % of the active links' capacity (quick-check.yaml, the
profile's nvlink.link_gbs_per_direction). An idle GPU at idle power (an idle H200: 80–120 W
of 700 W) is healthy, and a busy one at its cap with reason 0x4 (SW power cap) and SM clocks
below max is too.
"""
