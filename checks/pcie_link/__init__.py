"""`pcie_link`: is every GPU's PCIe link as wide and as fast as it can be, and clean?

Reads, per GPU: NVML's current and maximum link width and generation (or the
`nvidia-smi --query-gpu` fields `pcie.link.width.*` / `pcie.link.gen.*` without NVML); sysfs
`current_link_width/speed` and `max_link_width/speed` of the GPU and of each upstream port on
its path to the root port; the PCIe replay counter at the start and end of the sampling window
(or dmon's `pci` column, one reading); PCIe TX/RX throughput samples.

Decides with no threshold: a link narrower than it can be is a finding at once
(`pcie_link.width_degraded`, on the GPU, naming the port): the seed's table has x16 healthy
and x8 or lower degraded, and the message gives the share of the link's bandwidth left. A
link's width is judged against the narrower of its two ends' maxima, so a GPU in a slot wired
x8 is not flagged.

Leaves to the rules (`rules/gpu-health.yaml`): the link *generation* (an idle GPU lowers it to
save power, so it is judged only while the GPU is busy: facts `gen_below_max`), and the
replay rate per minute against DCGM's budget (facts `replay_per_min`, `replay_delta`).
Metrics: replay total (`hw.errors`, `error.type=pcie_replay`), replay rate, link width and
generation, TX/RX throughput (`hw.gpu.io`).
"""
