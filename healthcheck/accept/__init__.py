"""`sitscheck accept`, the parent side: the plan, the workload children, the soak's sampler."""
