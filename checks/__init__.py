"""Check plugins shipped with sitscheck (one folder per check: parse.py pure, check.py I/O)."""
