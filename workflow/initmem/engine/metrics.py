"""The metrics record a trainer returns (docs/outputs.md): its format number and the keys every
record has. The engine writes it; :mod:`initmem.pipeline.records` stores and checks it on disk."""

METRICS_FORMAT = 1
REQUIRED_KEYS = ("run_id", "spec", "status", "history", "summary", "env", "wall_seconds")
