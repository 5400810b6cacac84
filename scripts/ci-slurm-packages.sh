#!/usr/bin/env bash
# CI: Debian's Slurm and munge for tests/grid/test_grid_slurm.py, which starts its own single-node cluster (munged,
# slurmctld, slurmd on localhost, state in a temporary folder) and stops it by pid. That cluster has its own
# munge key and socket, ports and configuration: whatever the packages set up under /etc is not used.
set -euo pipefail
if command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "ci-slurm-packages.sh: not root, cannot install slurm-wlm and munge; the Slurm test will be skipped" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
