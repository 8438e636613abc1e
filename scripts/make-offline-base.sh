#!/usr/bin/env bash
# Make a local Debian bookworm base image, localhost/bookworm-min, for building docker/Dockerfile where no
# container registry is reachable (so python:3.11-slim-bookworm cannot be pulled) but a Debian mirror is.
#
#   sudo bash scripts/make-offline-base.sh            # makes localhost/bookworm-min (about 3 min)
#   sudo bash scripts/make-offline-base.sh --setup    # only the podman configuration below
#   bash scripts/make-offline-base.sh --print-mirror   # only print the mirror it would use
#
# 1. debootstrap --variant=minbase bookworm into a temporary folder, from the Debian mirror that this
#    machine's own apt already uses (/etc/apt/sources.list or /etc/apt/sources.list.d/*.sources). No
#    package host is written into the repository: a mirror is the machine's business (a proxy, a
#    snapshot, a local mirror), and a hard-coded one would be wrong somewhere.
# 2. tar the tree into `podman import` (or `docker import`): an image with one layer and no metadata.
#    Its python3 is Debian's 3.11; the Dockerfile installs python3 and python3-venv when the base lacks them.
#
# It also makes podman able to run containers on a machine like the one this was written on (root, no
# systemd, hybrid cgroups, a tight RLIMIT_NOFILE hard limit); see setup_podman. Idempotent: the image is
# kept if it exists (FORCE=1 makes it again), the configuration is only added when missing.
# Needs root (debootstrap creates device nodes and chowns files) and: debootstrap, podman or docker.
set -euo pipefail

IMAGE=${BASE_IMAGE:-localhost/bookworm-min}
SUITE=bookworm
CONTAINERS_CONF=${CONTAINERS_CONF_PATH:-/etc/containers/containers.conf}
APT_ETC=${APT_ETC:-/etc/apt}  # overridable for tests/containers (a fake sources tree)

die() { echo "make-offline-base: $*" >&2; exit 1; }

# --------------------------------------------------------------------------- podman configuration
# Why each setting (measured on the machine this was written on: Debian 12, root, podman 4.3.1):
# - [containers] default_ulimits = []: podman's default asks the runtime to raise RLIMIT_NOFILE for every
#   container to a value above this machine's hard limit; setrlimit then fails ("crun: setrlimit
#   RLIMIT_NOFILE: Operation not permitted") and nothing runs. An empty list keeps the caller's limits.
# - runc and cgroupfs are not written here but passed on each command line (`podman --runtime runc
#   --cgroup-manager cgroupfs`, as the Makefile does): crun refuses this machine's hybrid cgroup layout and
#   there is no systemd to manage cgroups. Passing them per command keeps other podman users of the
#   machine on their own defaults; only the ulimit default has no command-line override for `podman build`'s
#   RUN steps.
setup_podman() {
  command -v podman >/dev/null || return 0
  mkdir -p "$(dirname "$CONTAINERS_CONF")"
  touch "$CONTAINERS_CONF"
  if grep -Eq '^[[:space:]]*default_ulimits[[:space:]]*=' "$CONTAINERS_CONF"; then
    grep -Eq '^[[:space:]]*default_ulimits[[:space:]]*=[[:space:]]*\[[[:space:]]*\]' "$CONTAINERS_CONF" \
      || echo "make-offline-base: warning: $CONTAINERS_CONF sets default_ulimits to something else;" \
              "if containers fail with 'setrlimit ... Operation not permitted', set it to []" >&2
    return 0
  fi
  if grep -Eq '^[[:space:]]*\[containers\]' "$CONTAINERS_CONF"; then
    # Put the key right under the existing table header (a key after another table would belong to that one).
    sed -i '0,/^[[:space:]]*\[containers\]/s//[containers]\ndefault_ulimits = []/' "$CONTAINERS_CONF"
  else
    printf '\n[containers]\n# added by MedImageOSWorld scripts/make-offline-base.sh: see the comment there\ndefault_ulimits = []\n' \
      >> "$CONTAINERS_CONF"
  fi
  echo "make-offline-base: set default_ulimits = [] in $CONTAINERS_CONF"
}

# --------------------------------------------------------------------------- the Debian mirror
# The first "deb" source whose suite is bookworm itself (not bookworm-security/-updates), one-line
# (sources.list, *.list) or deb822 (*.sources) format. MIRROR=... overrides it.
apt_mirror() {
  local f
  for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    awk -v s="$SUITE" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                         if ($(i + 1) == s) { print $i; exit } }' "$f"
  done | head -n1 | grep . && return 0
  for f in "$APT_ETC"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822 stanzas are separated by blank lines; keep the first URI of a "Types: deb" stanza listing SUITE.
    awk -v s="$SUITE" 'BEGIN { RS = ""; FS = "\n" }
      { types = uris = suites = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) types = $i; else if ($i ~ /^URIs:/) uris = $i; else if ($i ~ /^Suites:/) suites = $i
        }
        if (types ~ /[[:space:]]deb([[:space:]]|$)/ && (" " suites " ") ~ ("[[:space:]]" s "[[:space:]]")) {
          split(uris, u, /[[:space:]]+/); print u[2]; exit
        } }' "$f"
  done | head -n1 | grep .
}

# CONTAINER_ENGINE (the Makefile passes the engine it builds with, so the base lands where the build looks)
# or podman, else a running docker.
engine() {
  if [ -n "${CONTAINER_ENGINE:-}" ]; then echo "$CONTAINER_ENGINE"
  elif command -v podman >/dev/null; then echo "podman --runtime runc --cgroup-manager cgroupfs"
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then echo docker
  else die "neither podman nor a running docker was found (apt-get install podman runc)"; fi
}

if [ "${1:-}" = "--print-mirror" ]; then
  apt_mirror || die "no Debian $SUITE mirror found in $APT_ETC/sources.list or $APT_ETC/sources.list.d/"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap makes device nodes and sets file owners)"
setup_podman
[ "${1:-}" = "--setup" ] && exit 0

ENGINE=$(engine)
if [ "${FORCE:-0}" != 1 ] && $ENGINE image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "make-offline-base: $IMAGE exists (FORCE=1 makes it again)"; exit 0
fi
command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
MIRROR=${MIRROR:-$(apt_mirror)} \
  || die "no Debian $SUITE mirror found in $APT_ETC/sources.list or $APT_ETC/sources.list.d/ (set MIRROR=...)"

DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/bookworm-min.XXXXXX")
# The tree is about 150 MB of root-owned files: remove it whatever happens.
trap 'rm -rf --one-file-system "$DIR"' EXIT
echo "make-offline-base: debootstrap --variant=minbase $SUITE from $MIRROR"
start=$(date +%s)
debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" >"$DIR.log" 2>&1 \
  || { tail -n 20 "$DIR.log" >&2; rm -f "$DIR.log"; die "debootstrap failed (log above)"; }
rm -f "$DIR.log"
# The image's apt uses the same mirror the tree came from (debootstrap wrote it) and has no package
# lists: every Dockerfile RUN that installs starts with apt-get update. Caches are dropped before import.
rm -rf "$DIR"/var/cache/apt/archives/*.deb "$DIR"/var/lib/apt/lists/*
tar -C "$DIR" -c . | $ENGINE import - "$IMAGE" >/dev/null
echo "make-offline-base: $IMAGE made in $(( $(date +%s) - start )) s"
$ENGINE run --rm --network host "$IMAGE" cat /etc/debian_version
