"""sitscheck-bar1-memory: a sitscheck check plugin for each GPU's BAR1 aperture.

Installed beside sitscheck, it registers the `bar1_memory` check (entry-point group
`sitscheck.checks`) and its rule file (group `sitscheck.rules`). It reads one NVML value no
built-in check reads (`nvmlDeviceGetBAR1MemoryInfo`), declared in its own `check.py`: live
runs, `sitscheck collect` and replays derive from that declaration. Written against
`sitscheck.contract` and `sitscheck.models` only.
"""

__version__ = "0.1.0"
