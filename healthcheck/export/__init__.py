"""sitscheck.export."""
