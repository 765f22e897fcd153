"""The nvlink check."""
