#!/usr/bin/env bash
# Train every cell of the regime pilot (config/evidence-pilot.yaml and its overlays in sizes/) on the
# JPEG copy, then write the pilot's tables and figure (summarize.py). From the checkout root:
#   bash evidence/jpeg-cifar10-pilot/run.sh
set -euo pipefail
HERE=evidence/jpeg-cifar10-pilot
for cell in n128-r16 n256-r16 n512-r16 n256-r32; do
  overlay=""; [ "$cell" != n128-r16 ] && overlay="$HERE/sizes/$cell.yaml"
  .venv/bin/snakemake "results/pilot-$cell/tables/studies/sgd.runs.csv" "results/pilot-$cell/tables/studies/adam.runs.csv" \
    --cores 2 --keep-going --rerun-incomplete --quiet rules \
    --configfile config/evidence-pilot.yaml $overlay config/jpeg-copy.yaml
done
PYTHONPATH=workflow .venv/bin/python "$HERE/summarize.py"
