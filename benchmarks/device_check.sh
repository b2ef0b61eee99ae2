#!/usr/bin/env bash
# The device check for a GPU session (the `device` tool, or any CUDA machine): needs only a Python
# with torch and numpy (the machine's own: PY=python3 by default, not this project's .venv).
# Everything inside benchmarks/device_check.py has its own budget; the timeout is a backstop
# (<= 8 minutes). Writes device_check.md and rates.csv into $OUT (default benchmarks/device_check);
# commit both, and set compute.rate_table to the rates.csv (docs/packs.md, "The rate model").
set -uo pipefail
OUT="${OUT:-benchmarks/device_check}"
PY="${PY:-python3}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
timeout 470 "$PY" benchmarks/device_check.py --out "$OUT" "$@"
