"""`pcie_aer`: PCIe Advanced Error Reporting, from the kernel log and sysfs counters.

Reads every AER report in the kernel log (all kernel eras, firmware-first CPER blocks; see
parse.py) and the AER counters in sysfs of every GPU and every port on its upstream path to
the root port (counters still count what the log rate-limited away). Maps each event to the
GPU it concerns (the GPU itself, or a port above it). Decides, with no thresholds: an
uncorrectable fatal error is critical, a non-fatal one a warning; uncorrectable counts in
sysfs that the log does not show are reported too. Corrected errors are judged by rate in
the rules (`rules/kernel-log.yaml`: DCGM's budget per link generation).
"""
