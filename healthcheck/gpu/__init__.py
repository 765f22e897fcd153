"""The per-GPU view the GPU checks share: evidence (NVML snapshot, nvidia-smi outputs) → one
record shape per GPU, and the helpers every GPU check uses to judge it.

- `calls`: the NVML call behind each snapshot key, and the reading states.
- `view`: `GpuView`/`GpuFleet`, one GPU's record and every GPU's, with their accessors.
- `readings`: small pure helpers over readings (stats, numbers, sample series).
- `from_csv`: `nvidia-smi --query-gpu` CSV and `dmon` rows → records.
- `fleet`: the fleet from the best evidence the sources hold (read once per run).
- `judging`: what the GPU checks share (`FleetCheck`, `judge_each`, `collect_with`).
- `notes`: grouping per-GPU not-judged notes.
- `resolve`: each GPU's identity completed from sysfs and the last known inventory (a lost GPU).
- `identity`: which GPUs the node has (index, bus id) for checks that map evidence onto them.
"""
