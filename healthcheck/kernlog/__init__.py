"""sitscheck.kernlog."""
