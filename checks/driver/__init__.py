"""`driver`: does the NVIDIA driver answer, and does it list the GPUs this node must have?

Reads the NVML snapshot (live or the bundle's nvml.json), else `nvidia-smi -L`, else the
`--query-gpu` CSV. Decides, with no thresholds: NVIDIA GPUs on the PCI bus that no working
driver serves (critical, naming their bus ids and quoting NVML's, nvidia-smi's and the
kernel's words: the module not loaded, a library/module version mismatch, NVML's library
missing); nvidia-smi missing while NVML serves the GPUs (info); fewer or more GPUs than
expected (`--expect-gpus`, site config; critical); NVML and nvidia-smi disagree on the count
(critical); a GPU listed but lost or needing a reset (critical); VBIOS or driver versions
differing between GPUs of one model (warning: cold-start latency followed firmware in the
seed's fleet).
"""
