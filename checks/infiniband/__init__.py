"""`infiniband`: are the node's RDMA ports up at the rate the hardware needs, and are their
error, retransmission and CQ-overflow counters still over the sampling window?

Reads /sys/class/infiniband (live, or a bundle's `sysfs/class/infiniband/` as the first reading
and `sysfs-end/` as the last, with `sysfs-end/window_seconds` between them): each port's
`state`, `phys_state`, `rate`, `link_layer`, `counters/*`, `counters_ext/*` and `hw_counters/*`,
each HCA's `hw_counters/*` and `device/uevent` (its PCI function); the PCIe ports above HCAs
and GPUs (which GPUs share an HCA's switch); the kernel log's CQ overruns.

Decides with no threshold (judge.py, codes.py): a port not ACTIVE/LinkUp (critical), one
switched off (info), link_downed/local_link_integrity/excessive_buffer_overrun growing
(critical), link_error_recovery growing (warning), a CQ overrun in the kernel log (warning).
Leaves to rules/infiniband.yaml: the rate against the profile's `ib_rate_gbps`, the active
compute rails against its `ib_ports` (one per GPU: a disabled rail is lost), symbol/receive
error and transmit-discard rates, the retransmit rate (the seed's 0.5 %), the CQ-overflow rate
(the seed's 120/s), and a GPU whose paired NIC is down or slow. docs/infiniband.md has the
layout, the counters and their sources.
"""
