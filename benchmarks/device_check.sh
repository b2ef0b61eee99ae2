#!/usr/bin/env bash
# One prepared GPU session (the `device` tool, or any CUDA machine): pack throughput for ResNet-9
# width 64 in float32, TF32 and bf16 (eager), then what torch.compile and channels_last buy in bf16,
# then the pack-vs-single-run and compiled-vs-eager tests on CUDA. Writes into $OUT (default:
# benchmarks/). About 10 minutes on a recent GPU; commit the .md files with the device named.
set -uo pipefail
OUT="${OUT:-benchmarks}"
PY="${PY:-.venv/bin/python}"
export PYTHONPATH=workflow
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$OUT/device.txt"
timeout 240 "$PY" benchmarks/throughput.py --device cuda --width 64 --steps 20 --packs 1 4 16 64 \
  --batches 16 128 --engines loop vmap grouped --precisions float32 tf32 bf16 --max-images 8192 \
  | tee "$OUT/throughput_gpu.md"
timeout 200 "$PY" benchmarks/throughput.py --device cuda --width 64 --steps 20 --packs 1 16 64 \
  --batches 16 128 --engines loop vmap --precisions bf16 --variants compile channels_last --max-images 8192 \
  | tee "$OUT/throughput_gpu_variants.md"
INITMEM_TEST_DEVICE=cuda timeout 120 "$PY" -m pytest -q -p no:logging tests/test_packed.py tests/test_compile.py \
  -k "matches_single or diverged or compiled" | tee "$OUT/packed_tests_cuda.txt"
