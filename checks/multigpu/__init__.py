"""`multigpu`: NCCL's all-reduce over every GPU of the node (`sitscheck accept`)."""
