#!/bin/bash
# Build the Debian 12 (bookworm) image used as molecule test node, from debootstrap,
# so no container registry is needed.
#   usage (root): scripts/build-node-image.sh [TAG]     default TAG localhost/ascend-node-deb12:latest
#   DEBIAN_MIRROR=http://...  overrides debootstrap's default mirror.
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$repo/podman/containers.conf}
tag=${1:-localhost/ascend-node-deb12:latest}
# python3 (+ python3-apt for the apt module) for ansible, sudo for become; kmod and
# pciutils are on every real node anyway.
pkgs=python3,python3-apt,sudo,kmod,pciutils

rootfs=$(mktemp -d /var/tmp/ascend-node-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include="$pkgs" bookworm "$rootfs" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"}
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
: > "$rootfs"/etc/machine-id
# The package lists were removed above: date the lists dir back so that apt's
# cache_valid_time logic sees a stale cache and updates it before installing.
touch -d 2000-01-01 "$rootfs"/var/lib/apt/lists
tar -C "$rootfs" --numeric-owner -c . |
  podman import --change 'CMD=["sleep","infinity"]' --change "ENV=container=podman" - "$tag"
podman image inspect --format '{{.Id}} {{.Size}}' "$tag"
