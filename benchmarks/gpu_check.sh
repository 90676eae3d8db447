#!/usr/bin/env bash
# The GPU path in under 8 minutes on a lent machine, ending in one block to paste into
# benchmarks/RESULTS.md: environment facts, the GPU-marked tests, the sweep's slot probe
# (local:0 found on CUDA, down on a CPU), an out-of-memory drill (a trial whose batch cannot
# fit ends with exit 71 and its named reason), two minutes of the reference
# preset through the trial's loop split over torch.compile off/on x bf16 off/on (samples/s, host
# syncs per step, peak memory, loss finite), the loader's samples/s with the auto workers,
# batch-1 chunk latency of 1-step imf vs 100-step ddpm, and a 10-episode rollout.
#
#   bash benchmarks/gpu_check.sh                    # on the GPU machine, from the repo root
#   bash benchmarks/gpu_check.sh --device cpu --dry # a quick check of the script itself
#
# Needs only `pip install torch && pip install -e .[dev]` done beforehand; installs nothing.
# Exit status 0 when every stage passed. Results are kept in $GPU_CHECK_OUT (default: a
# fresh folder under /tmp, printed at the start).
set -u -o pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
          echo "options: --device cuda|cpu (default cuda), --dry, --seconds N (default 120),"
          echo "         --override KEY=VALUE (a config override for the training run, repeatable)"; }
DEVICE=cuda DRY=0 TRAIN_S=120 OVERRIDES=()
while (($#)); do
    case "$1" in
        --device) DEVICE=${2:?--device needs a value}; shift 2 ;;
        --dry) DRY=1; shift ;;
        --seconds) TRAIN_S=${2:?--seconds needs a value}; shift 2 ;;
        --override) OVERRIDES+=(--override "${2:?--override needs KEY=VALUE}"); shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "gpu_check: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python}
OUT=${GPU_CHECK_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")}
mkdir -p "$OUT"
RUN_ARGS=(--device "$DEVICE" --seconds "$TRAIN_S")
if ((DRY)); then
    RUN_ARGS=(--device "$DEVICE" --seconds "${GPU_CHECK_DRY_SECONDS:-10}" --dry)
fi
[[ $DEVICE == cpu ]] && RUN_ARGS+=(--cpu-bf16)  # run the same bf16 path on a CPU
RUN_ARGS+=("${OVERRIDES[@]}")
echo "gpu_check: device $DEVICE, dry $DRY, results in $OUT"

# 0. Preflight: the installed stack, imported from this checkout. Nothing is installed here.
if ! "$PY" - "$DEVICE" <<'EOF'
import pathlib, sys
missing = []
for name in ("torch", "pytest", "numpy", "zarr", "pymunk", "typer", "yaml", "matplotlib"):
    try:
        __import__(name)
    except Exception as exc:
        missing.append(f"{name} ({type(exc).__name__}: {exc})")
if missing:
    sys.exit("gpu_check: cannot import " + ", ".join(missing))
import torch
try:
    import imf, imf.policy, imf.train.trial, imf.pusht.env
except Exception as exc:
    sys.exit(f"gpu_check: cannot import imf ({type(exc).__name__}: {exc})")
here = pathlib.Path("imf").resolve()
if pathlib.Path(imf.__file__).resolve().parent != here:
    sys.exit(f"gpu_check: imf is imported from {pathlib.Path(imf.__file__).parent}, not from this checkout ({here})")
if sys.argv[1].startswith("cuda") and not torch.cuda.is_available():
    sys.exit(f"gpu_check: --device {sys.argv[1]} but torch {torch.__version__} sees no CUDA device "
             "(a CPU-only wheel, or no driver); use --device cpu --dry to check the script")
EOF
then
    echo "gpu_check: preflight failed. From the repo root run: pip install torch && pip install -e .[dev]" >&2
    exit 2
fi
echo "gpu_check: preflight ok"

FAILED=()
# 1. Environment facts.
echo "== environment"
if command -v nvidia-smi >/dev/null; then
    timeout 30 nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.txt" || FAILED+=(nvidia-smi)
else
    echo "nvidia-smi: not found" | tee "$OUT/nvidia-smi.txt"
    [[ $DEVICE == cuda* ]] && FAILED+=(nvidia-smi)
fi
"$PY" benchmarks/speed/gpu_check.py env "$OUT" || FAILED+=(env)

# 2. The GPU-marked tests (they skip without CUDA).
echo "== pytest -m gpu"
timeout 150 "$PY" -m pytest -q -m gpu tests -rs 2>&1 | tee "$OUT/pytest.log"
rc=${PIPESTATUS[0]}
line=$(grep -E '(passed|failed|skipped|error|no tests ran)' "$OUT/pytest.log" | tail -n 1 | tr -d '=' | xargs)
((rc == 0 || rc == 5)) || FAILED+=(pytest)
((rc == 124)) && line="timed out after 150 s; $line"
echo "${line:-no result} (exit $rc)" >"$OUT/pytest.txt"

# 3. The sweep's GPU slot probe, and a real out-of-memory drill (on a CPU: a cuda trial refused).
echo "== slot probe and out-of-memory drill"
timeout 300 "$PY" benchmarks/speed/gpu_check.py slot "$OUT" --device "$DEVICE" 2>&1 | tee "$OUT/slot.log"
((PIPESTATUS[0] == 0)) || FAILED+=("slot probe (see $OUT/slot.log)")
timeout 540 "$PY" benchmarks/speed/gpu_check.py oom "$OUT" --device "$DEVICE" 2>&1 | tee "$OUT/oom.log"
((PIPESTATUS[0] == 0)) || FAILED+=("out-of-memory drill (see $OUT/oom.log)")

# 4-6. Training for a fixed wall time, chunk latency, rollout (one process; see gpu_check.py).
echo "== reference preset: training, chunk latency, rollout"
# the budget covers torch.compile of two variants besides the training seconds
timeout $(( ${TRAIN_S%.*} + 900 )) "$PY" benchmarks/speed/gpu_check.py run "$OUT" "${RUN_ARGS[@]}" 2>&1 | tee "$OUT/run.log"
rc=${PIPESTATUS[0]}
((rc == 0)) || FAILED+=("run (exit $rc, see $OUT/run.log)")

# The block to paste into benchmarks/RESULTS.md.
echo
echo "==================== summary: paste into benchmarks/RESULTS.md ===================="
"$PY" benchmarks/speed/gpu_check.py summary "$OUT" | tee "$OUT/summary.md"
echo "===================================================================================="
if ((${#FAILED[@]})); then
    echo "gpu_check: FAILED: ${FAILED[*]}"
    exit 1
fi
echo "gpu_check: all stages passed"
