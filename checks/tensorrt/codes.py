"""The `tensorrt` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "tensorrt.engine_mismatch",
            Severity.CRITICAL,
            (
                "the engine was built on another GPU model or compute capability than the GPU "
                "it applies to: a TensorRT plan runs only where it was built"
            ),
            "rebuild the engine on this node's GPU model and deploy it",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "tensorrt.built_on_inconsistent",
            Severity.WARNING,
            (
                "the log names one GPU (an A100, sm_80) and reports another compute capability "
                "(SM_86): the engine is built or run for a different GPU than it names"
            ),
            (
                "find out which GPU the engine really targets; build it on the GPU model that "
                "runs it"
            ),
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "tensorrt.fallback",
            Severity.WARNING,
            "layers or tactics fell back to a slower path (no Tensor Core kernel)",
            (
                "give the builder enough workspace, use ops and precisions this GPU supports, "
                "build on the GPU model that runs the engine; then compare SM utilisation under"
                " load"
            ),
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "tensorrt.precision_fallback",
            Severity.WARNING,
            "layers were kept at a higher precision than asked",
            (
                "calibrate or set dynamic ranges for the named tensors (INT8), or enable the "
                "precision the layer needs"
            ),
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "tensorrt.build_failed",
            Severity.CRITICAL,
            "the TensorRT build failed: errors and no engine",
            "fix the first error the log names, then rebuild the engine",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "tensorrt.build_errors",
            Severity.WARNING,
            "the build finished but logged errors",
            "read the errors: the engine may lack what they name; rebuild",
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "tensorrt.probe_failed",
            Severity.CRITICAL,
            "the probe could not build a one-layer network on the GPU",
            (
                "check the CUDA/TensorRT install against the driver, then the GPU (Xids, "
                "nvidia-smi -q)"
            ),
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
    ]
)
