"""The oom_kill plugin's rule files (package data, entry-point group `sitscheck.rules`)."""
