"""sitscheck: node health checks for GPU inference nodes."""

__version__ = "0.1.0"
