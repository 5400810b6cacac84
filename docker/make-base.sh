#!/bin/sh
# Makes a Debian base image from Debian's own packages, for hosts that cannot pull images from a registry:
#   sh docker/make-base.sh [NAME]        (default NAME: focus-eval-base:bookworm; needs root and debootstrap)
# then build with `--build-arg BASE_IMAGE=NAME`. Does nothing when NAME already exists.
set -eu

name="${1:-focus-eval-base:bookworm}"
suite="${FOCUS_BASE_SUITE:-bookworm}"
mirror="${FOCUS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$name" >/dev/null 2>&1; then
    echo "make-base: $name exists"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { echo "make-base: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "make-base: debootstrap needs root" >&2; exit 2; }

rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
# The downloaded .deb files and package lists would only make the base larger.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
# `docker import` keeps no environment; PATH is set as registry images set it.
tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$name" >/dev/null
echo "make-base: $name made from Debian $suite"
