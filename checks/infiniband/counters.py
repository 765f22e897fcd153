"""The counters the check reads, what they count and how wide they are (pure tables).

PMA counters (`ports/N/counters/`, drivers/infiniband/core/sysfs.c `PORT_PMA_ATTR`) have the
widths of the IB PortCounters attribute and saturate at all ones (the IB spec: they stop, they
do not wrap); on devices with the extended set the four data/packet counters are 64-bit.
A counter at its maximum has unknown growth. `port_xmit_data`/`port_rcv_data` count 4-byte
words. mlx5 `hw_counters` (drivers/infiniband/hw/mlx5/counters.c) are 32-bit Q counters, the
congestion ones 64-bit.
"""

from __future__ import annotations

COUNTERS = "counters/"
COUNTERS_EXT = "counters_ext/"
HW = "hw_counters/"

PMA_WIDTH = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_data": 32,  # 64 with the extended set; all ones in 32 bits is read as stuck
    "port_rcv_data": 32,
    "port_xmit_packets": 32,
    "port_rcv_packets": 32,
    "port_xmit_wait": 32,
}
HW_WIDTH = 32  # mlx5 Q counters (query_q_counter_out fields are 32-bit)

# Any growth is a fault (the link went down, or the lossless fabric dropped packets).
LINK_FATAL = ("link_downed", "local_link_integrity_errors", "excessive_buffer_overrun_errors")
LINK_RECOVERY = "link_error_recovery"
# Judged by rate in the rules (rules/infiniband.yaml).
RATED = ("symbol_error", "port_rcv_errors", "port_xmit_discards")
# hw.errors: the PMA error counters, by error.type.
ERRORS = tuple(
    name
    for name in PMA_WIDTH
    if "data" not in name and "packets" not in name and name != "port_xmit_wait"
)
# mlx5's "retrans" Q-counter group (counters.c `retrans_q_cnts`, exposed where the device has
# the retransmission_q_counters capability): each counts a packet sent again or a NAK/timeout
# that makes the requester resend.
RETRANSMIT = (
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
)
# mlx5 congestion counters (counters.c `cong_cnts`, RoCE ECN/CNP): metrics only.
CONGESTION = ("rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent")
# Device-level CQ overflow counters (mlx4 `diag_device_only`: num_cqovf).
CQ_OVERFLOW = ("num_cqovf",)
