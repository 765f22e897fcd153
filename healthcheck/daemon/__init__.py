"""sitscheck.daemon."""
