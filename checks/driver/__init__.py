"""The driver check."""
