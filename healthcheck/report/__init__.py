"""sitscheck.report."""
