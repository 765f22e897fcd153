"""`topology`: are the GPUs joined as the board joins them, and what is near each GPU?

Reads `nvidia-smi topo -m` (live, or the bundle's `nvidia-smi-topo-m.txt`; any table shape
`parse.py` reads, ANSI header included), the NVML snapshot (per-GPU NVLink state and remote
bus ids; per pair `nvmlDeviceGetTopologyCommonAncestor` and NVLink P2P status), each GPU's
sysfs `numa_node`/`local_cpulist`, and `nvidia-smi -L` when NVML cannot be read. Without the
matrix it reports what NVML shows; a bundle with neither is skipped, saying why (live, a
node with a driver where both fail is UNKNOWN: nothing is probed before the checks start).

Facts (`checks[name=topology].facts`): the topo object exactly as docs/facts.md shapes it
(`gpus`, `nics`, `nic_legend`, `links`, `affinity`; empty without a matrix), plus `source`,
`summary` (gpu_count, nic_count, pair_count, nvlink_pairs, pcie_only_pairs, unknown_pairs,
min_nvlink, max_nvlink, asymmetric, nvml_disagreements, missing_gpus), `pairs` (one per GPU
pair: both cells, NVLink count, on NVLink or not, NVML's P2P status and common ancestor) and
`per_gpu` (index, bus id, nearest NIC and its kind, NVLink peers and active links, CPU/NUMA
affinity as printed and as sysfs reads it, whether it is present and consistent). `gpus`
stays the facts.md list of column names, so the per-GPU records are `per_gpu`, not `gpus`.

Decides, with no thresholds (judge.py): the matrix cannot be read (unknown, file:line); a GPU
the driver lists is missing from the matrix (critical); a cell a→b differs from b→a
(warning); the matrix and NVML disagree on a pair's NVLink P2P, PCIe common ancestor or active
link count, or on which GPUs exist (warning). A healthy NVSwitch board reads NVLink P2P with
a PCIe common ancestor of `hostbridge` and remote bus ids `ffffffff:ff:ff.0`: not a
disagreement. What the board should be (NV18 per pair on H100/H200 SXM, a PIX/PXB NIC per
GPU, CPU/NUMA affinity printed, GPU count) is judged by rules/topology.yaml against the
hardware profile.
"""
