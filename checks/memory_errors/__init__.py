"""The memory_errors check."""
