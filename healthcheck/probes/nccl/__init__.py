"""The NCCL all-reduce of `sitscheck accept`'s multi-GPU phase, one rank per GPU.

Each rank is an isolated child interpreter (`python -I -m sitscheck.probes.nccl`, started by
`sitscheck.accept.multigpu` through the phase's children) that sees every GPU of the phase
(CUDA_VISIBLE_DEVICES lists them; rank r works on the r-th) and joins the others through a
FileStore in a folder only the caller can write. NCCL comes from PyTorch (`torch.distributed`,
backend nccl); where PyTorch, CUDA or NCCL is missing the rank says why and measures nothing.

`allreduce` does the measuring inside a rank, `__main__` is a rank's entry. The figure is
nccl-tests' bus bandwidth: algbw × 2(n−1)/n, algbw being the bytes of one all-reduce over its
time (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
"""

MODULE = "sitscheck.probes.nccl"  # what the parent starts, once per rank
# What a rank says it does before PyTorch and CUDA are up: one still doing it at the phase's
# end did not start in time (a slow start-up, not a collective that stopped responding).
STARTING = "nccl: starting (PyTorch, CUDA)"
