"""The bandwidth probe (`--bandwidth`, and `--load`): what each GPU's PCIe link, memory and
peer links deliver, measured in a child process through the CUDA driver API.

`measure` does the measuring (inside the child), `cuda` is its ctypes boundary, `__main__` is
the child's entry (`python -m sitscheck.probes.bandwidth`); `sitscheck.workloads.bandwidth`
starts it from sitscheck under a deadline and hands back its JSON record (`bandwidth.json` in
a bundle).
"""

from ...sources.artifacts import BANDWIDTH_FORMAT as FORMAT
from ...sources.artifacts import BANDWIDTH_JSON

__all__ = ["BANDWIDTH_JSON", "FORMAT"]
