"""`tensorrt`: what TensorRT build logs say about this node's GPUs, and whether TensorRT can
build on them.

Reads: every TensorRT log the sources name (a bundle's ``tensorrt/*.log|*.txt``; live, the
``--trt-log`` / config ``trt_logs`` paths and globs), each streamed line by line with
undecodable bytes replaced and overlong lines cut, never read whole (parse.py scans it in
bounded memory). With ``--trt-probe`` (``trt_probe: true``) on a live node it also builds a
one-layer network on each GPU in a child process per GPU, under the check's deadline, through
the TensorRT Python API (probe.py; the optional ``sitscheck[tensorrt]`` extra). The probe's
logger prints trtexec-style lines that the same scanner reads. Without the extra, or when
replaying a bundle, the probe is not run and ``not_judged`` says why.

Decides (judge.py), per log:
- ``tensorrt.engine_mismatch`` (critical): the engine was built on another GPU model or compute
  capability than the node's GPUs it applies to (a log naming "GPU N" applies to GPU N,
  otherwise to every GPU). TensorRT plans are not portable across GPU models.
- ``tensorrt.built_on_inconsistent`` (warning): the log contradicts itself: it names a GPU
  (an A100, sm_80) and reports another compute capability (SM_86).
- ``tensorrt.fallback`` / ``tensorrt.precision_fallback`` (warning): layers or tactics on a
  slower path, layers kept at a higher precision than asked; the layers are named.
- ``tensorrt.build_failed`` (critical): errors and no sign the build finished (or an explicit
  build-failed line); ``tensorrt.build_errors`` (warning) when the build reported success.
- ``tensorrt.probe_failed`` (critical): the probe could not build on a GPU.

Facts: ``logs`` (one per log file: facts.md "trt" plus ``file``, ``layers``, ``fused``, timing,
memory, ``truncated``), ``gpus`` (per GPU: fallback counts of the logs that apply to it,
``engine_mismatch``, those logs' files, ``probe_built``) and ``probe`` (null unless asked).
Thresholds and cross-checks with other checks (a fallback with low SM utilisation) are rules:
``rules/tensorrt.yaml``.
"""
