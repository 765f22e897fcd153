"""The gpu_telemetry check."""
