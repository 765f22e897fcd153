"""`memory_errors`: has a GPU's memory (HBM/GDDR) failed, and does it need a reset or an RMA?

Reads, per GPU: ECC mode and the volatile (since the driver loaded) and aggregate (lifetime)
corrected and uncorrected ECC error counts; row remapping on Ampere and newer (rows remapped
for corrected and uncorrected errors, a remap *pending* until the next GPU reset, a remap
*failure*, and the per-bank histogram of spare rows left); retired pages on older GPUs
(single- and double-bit retirements, and a retirement pending a reset). From the NVML
snapshot, else from the `nvidia-smi --query-gpu` fields `ecc.*`, `remapped_rows.*` and
`retired_pages.*`. A counter the GPU does not support is listed in `not_judged`, never read
as zero.

Decides with no threshold: a pending remap or a pending page retirement means the GPU needs a
reset to take the bad memory out of use (warning); a remap failure means the GPU ran out of
spare rows and needs hardware inspection (critical). Counts (volatile uncorrected ECC errors,
retired pages against the RMA limit, banks with no spare rows) are judged by the rules in
`rules/gpu-health.yaml`.
"""
