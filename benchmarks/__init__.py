"""sitscheck benchmarks: `python -m benchmarks` (see README)."""
