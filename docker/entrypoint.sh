#!/bin/sh
# Container entrypoint: checks the GPU and its driver, then runs `focus-eval ARGS`, or with FOCUS_NUM_PROCESSES=N
# (N > 1) N data-parallel processes: `accelerate launch --multi_gpu --num_processes N -m focus_eval ARGS` on GPUs,
# `torchrun --standalone ... --nproc_per_node N -m focus_eval ARGS` on the CPU. HF_HUB_OFFLINE=1 is honoured as set.
#
# When a GPU is required (see needs_gpu) and none is visible, or the host driver cannot run the image's CUDA
# runtime, it stops with a message saying what to do instead of running on the CPU.
set -eu

: "${FOCUS_DATA:=/data}"
: "${FOCUS_OUTPUT:=/results}"
: "${FOCUS_NUM_PROCESSES:=1}"
: "${FOCUS_CUDA_COMPAT_DIR:=/usr/local/cuda/compat}"
export FOCUS_DATA FOCUS_OUTPUT
me=focus-eval-entrypoint

say() { echo "$me: $*" >&2; }
die() { code=$1; shift; say "$*"; exit "$code"; }

if [ "${HF_HUB_OFFLINE:-0}" = "1" ]; then
    export TRANSFORMERS_OFFLINE=1
fi
# `docker run --user UID:GID` with a uid the image does not know leaves HOME at /, where caches cannot be written.
if [ ! -w "${HOME:-/}" ]; then
    export HOME="/tmp/focus-home-$(id -u)"
    mkdir -p "$HOME"
fi

case "$FOCUS_NUM_PROCESSES" in
    ''|*[!0-9]*) die 2 "FOCUS_NUM_PROCESSES must be a number, got '$FOCUS_NUM_PROCESSES'" ;;
esac

# The device asked for with --device (empty when not given).
device_arg() {
    prev=""; device=""
    for arg in "$@"; do
        [ "$prev" = "--device" ] && device="$arg"
        case "$arg" in --device=*) device="${arg#--device=}" ;; esac
        prev="$arg"
    done
    echo "$device"
}

# The rule: FOCUS_REQUIRE_GPU=1 requires a GPU for any command and FOCUS_REQUIRE_GPU=0 for none. Unset (or auto),
# `--device cuda...` requires one, `--device cpu` does not, and otherwise an evaluation (`focus-eval --model ...`,
# `run`) or fine-tuning (`sft`) does while the other commands (demo, datasets, leaderboard, help, ...) do not.
needs_gpu() {
    case "${FOCUS_REQUIRE_GPU:-auto}" in
        1) return 0 ;;
        0) return 1 ;;
        auto) ;;
        *) die 2 "FOCUS_REQUIRE_GPU must be 1, 0 or auto, got '$FOCUS_REQUIRE_GPU'" ;;
    esac
    case "$(device_arg "$@")" in
        cuda*) return 0 ;;
        ?*) return 1 ;;
    esac
    for arg in "$@"; do
        case "$arg" in -h|--help|-V|--version) return 1 ;; esac
    done
    case "${1:-}" in
        ''|datasets|synth|tasks|models|score|leaderboard|compare|demo|bench) return 1 ;;
        *) return 0 ;;
    esac
}

# One line per visible GPU, "name, driver version"; nothing when no GPU is visible (no nvidia-smi, or one that
# fails because it reaches no driver).
gpu_lines() {
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    smi="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)" || return 0
    printf '%s\n' "$smi" | grep -v '^[[:space:]]*$' || true
}

# The CUDA version of the installed torch (recorded at image build time).
cuda_runtime() {
    if [ -n "${FOCUS_CUDA_RUNTIME:-}" ]; then
        echo "$FOCUS_CUDA_RUNTIME"
    elif [ -s "${VIRTUAL_ENV:-/nonexistent}/torch-cuda-version" ]; then
        cat "$VIRTUAL_ENV/torch-cuda-version"
    else
        python -c "import torch; print(torch.version.cuda or '')" 2>/dev/null || true
    fi
}

# The oldest driver branch that runs a CUDA major release without the forward-compatibility libraries.
native_driver() {
    case "$1" in
        13) echo 580 ;;
        12) echo 525 ;;
        11) echo 450 ;;
        *) echo 0 ;;
    esac
}

# The driver branches the image's forward-compatibility libraries support, from the base image's
# NVIDIA_REQUIRE_CUDA ("... brand=tesla,driver>=550,driver<551 ...").
compat_branches() {
    for clause in ${NVIDIA_REQUIRE_CUDA:-}; do
        case "$clause" in
            brand=tesla,driver\>=*) branch="${clause#brand=tesla,driver>=}"; echo "${branch%%,*}" ;;
        esac
    done
}

# Decides whether the host driver runs the CUDA runtime natively, through the forward-compatibility libraries
# (then LD_LIBRARY_PATH points at them), or not at all (then it says why and what to do, and returns 3).
check_driver() {
    name="$1"; driver="$2"; runtime="$3"
    branch="${driver%%.*}"
    native="$(native_driver "${runtime%%.*}")"
    case "$branch" in ''|*[!0-9]*) say "cannot read the driver version from nvidia-smi ('$driver')"; return 3 ;; esac
    if [ "$branch" -ge "$native" ]; then
        say "GPU $name, driver $driver, CUDA runtime ${runtime:-unknown}"
        return 0
    fi
    branches="$(compat_branches | paste -sd ' ' -)"
    too_old="the host's NVIDIA driver $driver is too old for this image's CUDA $runtime runtime, which needs driver"
    too_old="$too_old $native or newer${branches:+, or on a data-center GPU one of the branches $branches}"
    advice="update the host's NVIDIA driver to $native or newer"
    if ! ls "$FOCUS_CUDA_COMPAT_DIR"/libcuda.so.* >/dev/null 2>&1; then
        say "$too_old; this image has no CUDA forward-compatibility libraries ($FOCUS_CUDA_COMPAT_DIR): $advice," \
            "or build the image on the CUDA base image (the default BASE_IMAGE), which has them"
        return 3
    fi
    case " $branches " in
        *" $branch "*) ;;
        *) say "$too_old: $advice"; return 3 ;;
    esac
    case "$name" in
        *GeForce*|*TITAN*) say "driver $driver runs CUDA $runtime only through the forward-compatibility libraries," \
                               "which work on data-center GPUs, not on '$name': $advice"; return 3 ;;
    esac
    export LD_LIBRARY_PATH="$FOCUS_CUDA_COMPAT_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    say "GPU $name, driver $driver, CUDA runtime $runtime through the forward-compatibility libraries in" \
        "$FOCUS_CUDA_COMPAT_DIR"
}

gpus="$(gpu_lines)"
gpu_count=0
if [ -n "$gpus" ]; then
    gpu_count="$(echo "$gpus" | wc -l)"
    first="$(echo "$gpus" | head -n 1)"
    if ! check_driver "${first%, *}" "${first##*, }" "$(cuda_runtime)"; then
        needs_gpu "$@" && exit 3
        say "continuing on the CPU: this command does not need the GPU"
        gpu_count=0
    fi
elif needs_gpu "$@"; then
    die 3 "this run needs a GPU, but none is visible in the container. Start it with 'docker run --gpus all ...'" \
        "(the host needs the NVIDIA Container Toolkit), or pass '--device cpu' (or -e FOCUS_REQUIRE_GPU=0) to run" \
        "on the CPU"
else
    say "no GPU visible; running on the CPU"
fi

# Several processes: accelerate's GPU launcher when GPUs are used; on the CPU torchrun, whose processes each
# create accelerate's state with cpu=True (the runner does so whenever CUDA is unavailable or --device is cpu).
if [ "$FOCUS_NUM_PROCESSES" -gt 1 ]; then
    if [ "$gpu_count" -gt 0 ] && [ "$(device_arg "$@")" != "cpu" ]; then
        [ "$FOCUS_NUM_PROCESSES" -le "$gpu_count" ] \
            || die 2 "FOCUS_NUM_PROCESSES=$FOCUS_NUM_PROCESSES, but $gpu_count GPU(s) are visible"
        set -- accelerate launch --multi_gpu --num_processes "$FOCUS_NUM_PROCESSES" -m focus_eval "$@"
    else
        # one machine: the processes meet on the loopback interface, which exists even with --network none
        export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}"
        set -- torchrun --standalone --local-addr 127.0.0.1 --nproc_per_node "$FOCUS_NUM_PROCESSES" -m focus_eval "$@"
    fi
else
    set -- focus-eval "$@"
fi

if [ "${FOCUS_ENTRYPOINT_DRY_RUN:-0}" = "1" ]; then
    say "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "$@"
    exit 0
fi
exec "$@"
