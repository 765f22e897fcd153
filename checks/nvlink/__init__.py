"""`nvlink`: is every NVLink of every GPU up, and are its error counters still?

Reads, per GPU, from the NVML snapshot: each link's state (active or not), its version and
the PCI bus id of the far end, and the replay, recovery, CRC-flit and CRC-data error counters
read before and after the sampling window. `nvidia-smi --query-gpu` prints no per-link state,
so without NVML every judgement here is listed in `not_judged`.

Decides with no threshold: a link the GPU reports but that is not active
(`nvlink.link_inactive`, critical: the GPU's NVLink bandwidth is cut and collectives slow down
or hang); a replay or recovery counter that grew during the window (`nvlink.errors_grew`,
critical: DCGM fails a GPU on a single one).

CRC (flit, data) counters are judged by their rate, in the rules (`nvlink.crc_rate`: DCGM's
100 errors/s, below which the driver team calls them harmless). Real H200s (HGX, driver 580)
measured for this check grow their CRC-data counters all the time: about 8/s per GPU idle and
15/s under a GEMM load, summed over 18 links. Counters that did not move are history, not a
finding: the recorded idle H200 shows nonzero CRC-data totals on most links.

Leaves to the rules: the number of links a GPU of this model must report (the profile's
`nvlink.links`, 18 on an H200), facts `links_reported`/`links_active`; the CRC rate, facts
`errors_per_s`.
"""
