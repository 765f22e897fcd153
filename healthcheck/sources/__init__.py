"""sitscheck.sources."""
