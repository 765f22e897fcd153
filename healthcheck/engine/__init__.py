"""sitscheck.engine."""
