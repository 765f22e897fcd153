"""`driver`: does the NVIDIA driver answer, and does it list the GPUs this node must have?

Reads the NVML snapshot (live or the bundle's nvml.json), else `nvidia-smi -L`, else the
`--query-gpu` CSV. Decides, with no thresholds: the driver is installed but not loaded, or
does not answer (critical); fewer or more GPUs than expected (`--expect-gpus`, site config;
critical); NVML and nvidia-smi disagree on the count (critical); a GPU listed but lost or
needing a reset (critical); VBIOS or driver versions differing between GPUs of one model
(warning: cold-start latency followed firmware in the seed's fleet).
"""
