#!/usr/bin/env bash
# The paper's LoRA fine-tuning grid through `focus-eval grid`: 6 multimodal LLMs x {brset: dr, referable_dr,
# glaucoma; mbrset: dr, referable_dr}. The plan holds, per model, the base model's evaluation on every task of
# the three targets, one training job per adapter and each adapter's evaluation on every task of its target
# (after its training); `grid collect` compares the adapters with the base model and builds the leaderboard.
#
#   scripts/finetune_grid.sh [--dry-run] [--models "medgemma-4b qwen3-vl-8b"] [--data-root DIR]
#                            [--adapters DIR] [--results DIR] [--executor local|slurm] [--plan FILE] [--site DIR]
#
# --dry-run prints the commands instead of running them. Finished jobs are skipped when the script runs again.
# The local executor runs each job over every visible GPU (accelerate); with --executor slurm, pass Slurm
# settings through FOCUS_GRID_RUN_ARGS (e.g. "--cluster cluster.yaml"). docs/CLUSTER.md has the details.
set -euo pipefail

MODELS="gemma3-27b medgemma-4b medgemma1.5-4b medgemma-27b qwen3-vl-8b llava-next-8b"
CELLS="brset:dr,brset:referable_dr,brset:glaucoma,mbrset:dr,mbrset:referable_dr"
DATA_ROOT="${FOCUS_DATA:-data}"
ADAPTERS="adapters"
RESULTS="${FOCUS_OUTPUT:-results}"
EXECUTOR="local"
PLAN=""
SITE=""
DRY_RUN=0
FOCUS_EVAL="${FOCUS_EVAL:-focus-eval}"

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY_RUN=1 ;;
        --models) MODELS="${2//,/ }"; shift ;;
        --data-root) DATA_ROOT="$2"; shift ;;
        --adapters) ADAPTERS="$2"; shift ;;
        --results) RESULTS="$2"; shift ;;
        --executor) EXECUTOR="$2"; shift ;;
        --plan) PLAN="$2"; shift ;;
        --site) SITE="$2"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "finetune_grid.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

if [ -z "$PLAN" ]; then
    if [ "$DRY_RUN" = 1 ]; then
        PLAN="$(mktemp --suffix=.yaml)"
        trap 'rm -f "$PLAN"' EXIT
    else
        PLAN="$RESULTS/finetune-grid.yaml"
    fi
fi
SITE="${SITE:-$RESULTS/site}"
read -r -a RUN_ARGS <<< "${FOCUS_GRID_RUN_ARGS:-}"
[ "$EXECUTOR" = slurm ] && [ "$DRY_RUN" = 0 ] && RUN_ARGS+=(--wait)

models="$(echo $MODELS | tr ' ' ',')"
PLAN_ARGS=()
[ "$DRY_RUN" = 1 ] && PLAN_ARGS+=(--allow-missing)  # a dry run shows the grid without the data in place
"$FOCUS_EVAL" grid plan --models "$models" --tasks dr,referable_dr,glaucoma --finetune --finetune-cells "$CELLS" \
    --data-root "$DATA_ROOT" --output-path "$RESULTS" --adapters "$ADAPTERS" -o "$PLAN" "${PLAN_ARGS[@]}" >&2
if [ "$DRY_RUN" = 1 ]; then
    "$FOCUS_EVAL" grid run "$PLAN" --executor "$EXECUTOR" --dry-run "${RUN_ARGS[@]}"
    echo "$FOCUS_EVAL grid collect $PLAN -o $SITE"
    exit 0
fi
"$FOCUS_EVAL" grid run "$PLAN" --executor "$EXECUTOR" "${RUN_ARGS[@]}"
"$FOCUS_EVAL" grid collect "$PLAN" -o "$SITE"
