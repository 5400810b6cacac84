#!/usr/bin/env bash
# The paper's LoRA fine-tuning grid: 6 multimodal LLMs x {brset: dr, referable_dr, glaucoma; mbrset: dr,
# referable_dr}. For each model: evaluate the base model on every task of the three targets, train each
# adapter, evaluate each adapter on every task of its target, then compare adapters with the base model.
# Finished steps are skipped when the script runs again (sft and the runner resume by default).
#
#   scripts/finetune_grid.sh [--dry-run] [--models "medgemma-4b qwen3-vl-8b"] [--data-root DIR]
#                            [--adapters DIR] [--results DIR] [--launcher "accelerate launch"]
#
# --dry-run prints the commands instead of running them. The launcher runs training and evaluation over all
# local GPUs (accelerate launch uses every visible GPU when no accelerate config says otherwise).
set -euo pipefail

MODELS="gemma3-27b medgemma-4b medgemma1.5-4b medgemma-27b qwen3-vl-8b llava-next-8b"
GRID="brset:dr brset:referable_dr brset:glaucoma mbrset:dr mbrset:referable_dr"
DATA_ROOT="${FOCUS_DATA:-data}"
ADAPTERS="adapters"
RESULTS="${FOCUS_OUTPUT:-results}"
LAUNCHER="accelerate launch"
DRY_RUN=0

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY_RUN=1 ;;
        --models) MODELS="${2//,/ }"; shift ;;
        --data-root) DATA_ROOT="$2"; shift ;;
        --adapters) ADAPTERS="$2"; shift ;;
        --results) RESULTS="$2"; shift ;;
        --launcher) LAUNCHER="$2"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "finetune_grid.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

step() {
    if [ "$DRY_RUN" = 1 ]; then
        echo "$*"
    else
        echo "+ $*" >&2
        "$@"
    fi
}

read -r -a LAUNCH <<< "$LAUNCHER"

for model in $MODELS; do
    step "${LAUNCH[@]}" -m focus_eval --model "$model" --tasks dr,referable_dr,glaucoma \
        --data-root "$DATA_ROOT" --output-path "$RESULTS"
    evaluated=()
    for cell in $GRID; do
        dataset="${cell%%:*}"
        target="${cell##*:}"
        adapter="$ADAPTERS/$model/sft-${target}_${dataset}"
        step "${LAUNCH[@]}" -m focus_eval sft --model "$model" --dataset "$dataset" --target "$target" \
            --data-root "$DATA_ROOT" --output "$adapter"
        step "${LAUNCH[@]}" -m focus_eval --model "$model" --tasks "$target" --adapter "$adapter" \
            --data-root "$DATA_ROOT" --output-path "$RESULTS"
        evaluated+=("$RESULTS/$model@sft-${target}_${dataset}")
    done
    step focus-eval compare --base "$RESULTS/$model" --ft "${evaluated[@]}" -o "$RESULTS/$model/compare.jsonl"
done
