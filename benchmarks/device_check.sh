#!/usr/bin/env bash
# The device check for a GPU session (the `device` tool, or any CUDA machine): needs only a Python
# with torch >= 2.6 and numpy (the machine's own: PY=python3 by default, not this project's .venv;
# the library is imported from this checkout). `--plan` lists the rows and their expected seconds.
# benchmarks/device_check.py keeps its own budget (420 s); the timeout is a backstop (7.5 minutes),
# and the table and rates.csv are rewritten after every row, so even a timeout leaves them.
# Writes device_check.md and rates.csv into $OUT (default benchmarks/device_check); commit both, and set compute.rate_table to the rates.csv (docs/packs.md, "The rate model").
set -uo pipefail
OUT="${OUT:-benchmarks/device_check}"
PY="${PY:-python3}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}" timeout 450 "$PY" benchmarks/device_check.py --out "$OUT" "$@"
