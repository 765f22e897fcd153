"""sitscheck-oom-kill: a sitscheck check plugin for the kernel OOM killer's reports.

Installed beside sitscheck, it registers the `oom_kill` check (entry-point group
`sitscheck.checks`) and its rule file (group `sitscheck.rules`). The worked example of
sitscheck's docs/plugins.md: everything here is written against `sitscheck.contract` and
`sitscheck.models` only.
"""

__version__ = "0.1.0"
