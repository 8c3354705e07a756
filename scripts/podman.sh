#!/usr/bin/env bash
# podman with the project's settings, for the container tests and the image build:
#   bash scripts/podman.sh images
#   bash scripts/podman.sh system service --time=0 unix:///tmp/podman.sock   # Docker's API
#
# Storage lives under .cache/podman, run state under /tmp, both outside the checkout's tracked
# files. The storage driver is the kernel's overlay where the kernel has it (a container starts in
# under a second), else vfs, which works anywhere but copies the whole image for every container
# (15-25 s each on a loaded 2-core machine); KAFKALITE_PODMAN_STORAGE_DRIVER=vfs|overlay forces
# one. Each driver has its own storage directory. runc runs the containers, with cgroups managed by podman
# itself (no systemd), no default rlimits and no pids limit (machines without systemd or with a
# low hard limit refuse podman's defaults). Networks made through podman (or its Docker API) are
# kept in one directory per user of the machine, not in /etc/containers and not per checkout:
# podman 4.3 keeps the lock that orders netavark's firewall and bridge changes in that directory,
# and every checkout's containers share the host's one network namespace (its iptables chains,
# bridge names and subnets), so two checkouts testing at once must take the same lock (newer podman
# has root use one lock per machine for this reason). Everything is set through CONTAINERS_CONF and
# CONTAINERS_STORAGE_CONF, so `podman system service` runs with the same settings as the CLI.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PODMAN_DIR="${KAFKALITE_PODMAN_DIR:-$REPO/.cache/podman}"
# run state is per storage directory (two checkouts with their own .cache never share it)
RUN_DIR="${KAFKALITE_PODMAN_RUN_DIR:-/tmp/kafkalite-podman-$(id -u)-$(printf '%s' "$PODMAN_DIR" | sha256sum | cut -c1-8)}"
# networks: one directory per user of the machine (see above)
NET_DIR="/tmp/kafkalite-podman-$(id -u)-networks"
DRIVER="${KAFKALITE_PODMAN_STORAGE_DRIVER:-}"
if [ -z "$DRIVER" ]; then
    mkdir -p "$PODMAN_DIR"
    # overlay needs the kernel module and a backing file system that is not itself overlay
    if grep -qw overlay /proc/filesystems && [ "$(stat -f -c %T "$PODMAN_DIR")" != overlayfs ]; then
        DRIVER=overlay
    else
        DRIVER=vfs
    fi
fi
mkdir -p "$PODMAN_DIR/storage-$DRIVER" "$RUN_DIR/storage-$DRIVER" "$RUN_DIR/tmp"
mkdir -p -m 700 "$NET_DIR"
# /tmp is every user's: a directory of these names made by someone else is not used
for dir in "$RUN_DIR" "$NET_DIR"; do
    if [ -L "$dir" ] || [ ! -O "$dir" ]; then
        echo "scripts/podman.sh: $dir belongs to another user or is a link: it is not used (remove it)" >&2
        exit 2
    fi
done

containers_conf="[containers]
default_ulimits = []
pids_limit = 0
log_driver = \"k8s-file\"

[engine]
runtime = \"runc\"
cgroup_manager = \"cgroupfs\"
events_logger = \"file\"
events_logfile_path = \"$RUN_DIR/events.log\"
tmp_dir = \"$RUN_DIR/tmp\"

[network]
network_config_dir = \"$NET_DIR\"
"
storage_conf="[storage]
driver = \"$DRIVER\"
graphroot = \"$PODMAN_DIR/storage-$DRIVER\"
runroot = \"$RUN_DIR/storage-$DRIVER\"
"
# rewritten only when different, so concurrent calls do not race on a half-written file
write_if_changed() {
    if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
        printf '%s' "$2" > "$1.$$" && mv -f "$1.$$" "$1"
    fi
}
write_if_changed "$RUN_DIR/containers.conf" "$containers_conf"
write_if_changed "$RUN_DIR/storage-$DRIVER.conf" "$storage_conf"
export CONTAINERS_CONF="$RUN_DIR/containers.conf"
export CONTAINERS_STORAGE_CONF="$RUN_DIR/storage-$DRIVER.conf"
exec podman "$@"
