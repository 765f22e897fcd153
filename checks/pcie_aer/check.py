"""The `pcie_aer` check: kernel log + sysfs counters → events per GPU path."""

from __future__ import annotations

from sitscheck.contract import (
    Anchor,
    EvidenceSpec,
    KernelLogInterest,
    LazyCheck,
    MetricKind,
    MetricSpec,
)
from sitscheck.status import Layer

# Of the lines after an anchor, those the parser reads hold one of these words: "Error" stands
# for "PCIe Bus Error" and "[Hardware Error]", "DPC" for a containment report; the rest are
# the detail lines some kernels print without "AER:" (the status word, the 4.x "can't find"
# note, the bit lines of 4.x+ ":    [ 0] RxErr", of 2.6/3.x ":  [ 0] ..." and collapsed
# ": [14] CmpltTO" / ": [0] RxErr": a bit of the 32-bit status word). Under 64 words, all
# are found at once in SIMD (`kernlog.candidates.finder`).
_BIT_INDICES = tuple(f": [{bit:2d}]" for bit in range(32)) + tuple(f": [{b}]" for b in range(10))
AER_WORDS = ("AER", "Error", "status/mask", "DPC", "aer_", "find device of ID", ":    [", ":  [")

KERNEL_LOG = KernelLogInterest(
    # "AER" and firmware-first "[Hardware Error]" reports with the detail lines after them,
    # and DPC containments (no "AER" before their details)
    anchors=(
        Anchor(b"AER", after=48),
        Anchor(b"[Hardware Error]", after=48),
        Anchor(b"DPC", after=48),
    ),
    handler="sitscheck.checks.pcie_aer.parse:AerLines",
    wants=tuple(word.encode() for word in AER_WORDS + _BIT_INDICES),
    head_lines=48,
)


class PcieAerCheck(LazyCheck):
    name = "pcie_aer"
    summary = "PCIe AER errors in the kernel log and sysfs counters, per GPU path"
    layer = Layer.HARDWARE
    needs_gpu = False
    metrics = (
        MetricSpec(
            "hw.errors",
            "{error}",
            "AER errors counted in sysfs, by device and severity",
            MetricKind.COUNTER,
        ),
        MetricSpec(
            "sitscheck.pcie.aer.events",
            "{event}",
            "AER reports in the kernel log",
            MetricKind.EVENT,
        ),
    )
    codes = "sitscheck.checks.pcie_aer.codes:CODES"
    facts = "sitscheck.checks.pcie_aer.facts:Facts"
    evidence = EvidenceSpec(
        summary=(
            "kernel log AER reports (native and firmware-first), mapped onto each GPU's PCIe path"
            " (root port → switch ports → GPU) through sysfs; sysfs aer_dev_* counters of each "
            "port"
        ),
        kernel_log=True,
        sysfs_paths=("sitscheck.sources.pci:gpu_path_files",),
    )
    kernel_log = KERNEL_LOG
    impl = "sitscheck.checks.pcie_aer.impl:PcieAerImpl"
