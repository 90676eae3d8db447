#!/usr/bin/env bash
# The mission's question at full size: causal against full attention over n_emb 128/256/384 x
# n_layer 6/12/18, 350 epochs, seed 42; each sweep on GPU 0 of this machine and GPUs 0 and 1 of
# a second host (examples/hosts_seed.yaml says how that host is reached), balanced by workload,
# one run per GPU at a time; then the two compared cell by cell (causal minus full).
#
#   examples/seed_sweep.sh --dry-run [--estimate]   # plan and check both sweeps, run nothing
#   examples/seed_sweep.sh                          # full, then causal, then the compare
#   imf status runs/full --watch                    # from another terminal
#   imf sweep --resume runs/full                    # after Ctrl-C or a lost controller, then
#                                                   # run this script again: a sweep already
#                                                   # there is not started twice
# A sweep that ends with failed trials exits 1 and stops the script before the next one.
# Settings (environment):
#   SEED_SWEEP_QUEUES  the queues, space-separated (default: local:0 and the GPU host's gpu:0,
#                      gpu:1); e.g. "local:cpu local:cpu local:cpu" plans it with no GPU host
#   GPU_HOST           user@host of the second machine (default me@gpubox, hosts_seed.yaml's)
#   HOSTS              the hosts file (default examples/hosts_seed.yaml)
#   N_HEAD             heads of both sweeps (default 1, the full-attention preset's, so that the
#                      two sweeps differ only in policy.mask; 4 is the causal preset's)
#   OUT                folder of the sweep folders (default runs)
# Any other argument is passed to both `imf sweep` commands.
set -euo pipefail
cd "$(dirname "$0")/.."
GPU_HOST="${GPU_HOST:-me@gpubox}"
read -r -a QUEUES <<<"${SEED_SWEEP_QUEUES:-local:0 ssh://$GPU_HOST/gpu:0 ssh://$GPU_HOST/gpu:1}"
OUT="${OUT:-runs}"
COMMON=(--grid 128,256,384x6,12,18 --epochs 350 --seed 42 --final-eval 200
        --hosts "${HOSTS:-examples/hosts_seed.yaml}" --out "$OUT" --retries 1 --stall-timeout 1800)
for q in "${QUEUES[@]}"; do COMMON+=(--queue "$q"); done
# --mask full starts from pusht_image_imf_fullattn (n_head 1), --mask causal from
# pusht_image_imf (n_head 4): one n_head for both keeps the mask the only difference.
HEADS=("policy.n_head=${N_HEAD:-1}")

dry=0
for arg in "$@"; do [[ $arg == --dry-run ]] && dry=1; done
if ((dry)); then
    imf sweep "${HEADS[@]}" --mask full --name full "${COMMON[@]}" "$@"
    imf sweep "${HEADS[@]}" --mask causal --name causal "${COMMON[@]}" "$@"
    exit 0
fi

run() {  # run() NAME MASK [ARGS]: start the sweep, or say it is there (resume it by hand)
    local name=$1 mask=$2
    shift 2
    if [[ -e $OUT/$name/sweep.json ]]; then
        echo "seed_sweep: $OUT/$name exists; continue it with imf sweep --resume $OUT/$name" >&2
        imf status "$OUT/$name"
        return
    fi
    imf sweep "${HEADS[@]}" --mask "$mask" --name "$name" "${COMMON[@]}" "$@" --dry-run >/dev/null
    imf sweep "${HEADS[@]}" --mask "$mask" --name "$name" "${COMMON[@]}" "$@"
}
run full full "$@"
run causal causal "$@"
# B - A: causal minus full per cell, on the selection seeds (--final-eval 200).
imf report "$OUT/full" "$OUT/causal" --out "$OUT/full-vs-causal"
