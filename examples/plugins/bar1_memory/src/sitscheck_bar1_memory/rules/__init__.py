"""The bar1_memory plugin's rule files (package data, entry-point group `sitscheck.rules`)."""
