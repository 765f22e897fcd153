"""sitscheck.smi."""
