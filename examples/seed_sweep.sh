#!/usr/bin/env bash
# The seed design's sweep: 9 full-attention runs (n_emb 128/256/384 x n_layer 6/12/18),
# 350 epochs, seed 42, on one local GPU and two GPUs of a second host (examples/hosts_seed.yaml),
# balanced by workload, one run per GPU at a time, watched to the end, then ranked.
#
#   examples/seed_sweep.sh             # plan, then run (Ctrl-C stops launching; resume below)
#   imf status runs/seed --watch       # from another terminal
#   imf sweep --resume runs/seed       # after Ctrl-C or a lost controller
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS="${HOSTS:-examples/hosts_seed.yaml}"
ARGS=(pusht_image_imf_fullattn --mask full --grid 128,256,384x6,12,18 --epochs 350 --seed 42
      --hosts "$HOSTS" --name seed --out runs --retries 1 --stall-timeout 1800)
imf sweep "${ARGS[@]}" --dry-run
imf sweep "${ARGS[@]}" "$@"
