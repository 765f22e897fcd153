"""Declared workloads, the parent side: the one runner of their isolated children
(`children`), what the parent reads of the GPUs through NVML around them (`gpus`), and the two
workloads a plain run starts (`load`: `run --load`; `bandwidth`: `run --bandwidth`). The live
sources, `collect` and `sitscheck accept` all start workloads through here; the workloads'
own modules (the children) are under `probes/`, and the record a phase writes is read by the
checks through `contract.phase_record`."""
