#!/usr/bin/env bash
# The container tests' tools and base image, called by scripts/install-test-deps.sh:
#   * podman, runc and debootstrap from Debian;
#   * localhost/kafkalite-base:bookworm, a Debian bookworm root file system (debootstrap, minbase)
#     with Debian's Python 3.11 and pip, imported into podman's storage. The Dockerfile builds on
#     it with --build-arg BASE_IMAGE=..., so the tests need no outside image registry.
# Idempotent: a stamp (this script's hash) next to the image makes a second run only check that
# the image is still there.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PODMAN="$REPO/scripts/podman.sh"
BASE_IMAGE="localhost/kafkalite-base:bookworm"
MIRROR="${KAFKALITE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
STAMP="${KAFKALITE_PODMAN_DIR:-$REPO/.cache/podman}/base-image.sha256"

need=()
for tool in podman runc debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
        podman runc debootstrap >/dev/null
fi

sha="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" = "$sha" ] && bash "$PODMAN" image exists "$BASE_IMAGE"; then
    exit 0
fi

# debootstrap runs as root (it chroots and mounts /proc); the tree is made in a temporary
# directory and removed once imported.
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
work="$(mktemp -d /tmp/kafkalite-base.XXXXXX)"
cleanup() {
    $SUDO umount -R "$work/rootfs/proc" "$work/rootfs/sys" 2>/dev/null || true
    $SUDO rm -rf --one-file-system "$work"
}
trap cleanup EXIT
root="$work/rootfs"
$SUDO debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates \
    bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -30 "$work/debootstrap.log" >&2; echo "debootstrap failed" >&2; exit 1; }
$SUDO umount -R "$root/proc" "$root/sys" 2>/dev/null || true
# What a container image does without: package lists and archives, docs, man pages, locales.
# Python 3.11 is this image's only Python, installed for the image alone, so Debian's guard
# against pip installing next to system packages (PEP 668) is lifted, as Python's images do.
$SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
    "$root"/var/log/* "$root"/usr/lib/python3.11/EXTERNALLY-MANAGED
$SUDO find "$root/usr/lib/python3" "$root/usr/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} +
$SUDO tar -C "$root" --one-file-system --numeric-owner -cf "$work/rootfs.tar" .
bash "$PODMAN" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    "$work/rootfs.tar" "$BASE_IMAGE" >/dev/null
mkdir -p "$(dirname "$STAMP")"
echo "$sha" > "$STAMP"
