"""The tensorrt check."""
