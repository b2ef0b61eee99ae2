#!/usr/bin/env bash
# Train every cell of the regime pilot (config/evidence-pilot.yaml, the n_train 128 16x16 cell with
# studies sgd and adam, and the overlays in sizes/, whose studies carry the cell's name) on the JPEG
# copy, then write the pilot's tables and figure (summarize.py). From the checkout root:
#   bash evidence/jpeg-cifar10-pilot/run.sh
set -euo pipefail
HERE=evidence/jpeg-cifar10-pilot
train() {  # cell, overlay file or "", study suffix
  .venv/bin/snakemake "results/pilot-$1/tables/studies/sgd$3.runs.csv" "results/pilot-$1/tables/studies/adam$3.runs.csv" \
    --cores 2 --keep-going --rerun-incomplete --quiet rules \
    --configfile config/evidence-pilot.yaml $2 config/jpeg-copy.yaml
}
train n128-r16 "" ""
for cell in n256-r16 n512-r16 n256-r32; do
  train "$cell" "$HERE/sizes/$cell.yaml" "_${cell/-/_}"
done
PYTHONPATH=workflow .venv/bin/python "$HERE/summarize.py"
