#!/bin/sh
# Container entrypoint: `docker run ... focus-eval ARGS` runs `focus-eval ARGS`, or, with
# FOCUS_NUM_PROCESSES=N (N > 1), `accelerate launch --multi_gpu --num_processes N -m focus_eval ARGS` for data
# parallelism over N GPUs. Hugging Face offline mode is honoured as set (HF_HUB_OFFLINE=1).
set -eu

: "${FOCUS_DATA:=/data}"
: "${FOCUS_OUTPUT:=/results}"
: "${FOCUS_NUM_PROCESSES:=1}"
export FOCUS_DATA FOCUS_OUTPUT

if [ "${HF_HUB_OFFLINE:-0}" = "1" ]; then
    export TRANSFORMERS_OFFLINE=1
fi

case "$FOCUS_NUM_PROCESSES" in
    ''|*[!0-9]*) echo "focus-eval-entrypoint: FOCUS_NUM_PROCESSES must be a number, got '$FOCUS_NUM_PROCESSES'" >&2; exit 2 ;;
esac

if [ "$FOCUS_NUM_PROCESSES" -gt 1 ]; then
    set -- accelerate launch --multi_gpu --num_processes "$FOCUS_NUM_PROCESSES" -m focus_eval "$@"
else
    set -- focus-eval "$@"
fi

if [ "${FOCUS_ENTRYPOINT_DRY_RUN:-0}" = "1" ]; then
    echo "$@"
    exit 0
fi
exec "$@"
