"""The topology check."""
