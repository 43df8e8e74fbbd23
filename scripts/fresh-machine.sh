#!/usr/bin/env bash
# scripts/fresh-machine.sh - runs dlc's two set-up commands as a new user would: in a
# brand-new minimal Debian 12 root that has nothing installed but Debian's base system
# (and the host's CUDA toolkit, read-only, where the host has one).
#
#   scripts/fresh-machine.sh [OPTIONS] run  [ARGS]    ./dlc.sh run ARGS in the fresh root
#   scripts/fresh-machine.sh [OPTIONS] test [ARGS]    ./dlc.sh test ARGS in the fresh root
#   scripts/fresh-machine.sh [OPTIONS] exec CMD ...   any command, from the clone's top
#
#   --rev REV        the commit to clone (default: HEAD; uncommitted changes never travel)
#   --keep           keep the root afterwards (its path is printed) instead of deleting it
#   --no-ccache      build with an empty compiler cache instead of sharing the host's
#   --refresh-base   make the base system again instead of unpacking the cached one
#
# Environment: DLC_FRESH_CACHE (default ~/.cache/dlc-fresh-machine: the base tarball, the
# roots while they run, downloaded .deb files), DLC_DEBIAN_MIRROR and
# DLC_DEBIAN_SECURITY_MIRROR (default deb.debian.org's). The root sees DLC_*, CTEST_* and
# proxy variables of the caller's environment, nothing else of it.
#
# How: debootstrap makes a minbase Debian 12 system once and its tarball is cached. Each
# run unpacks it into a new folder, clones the repository into /root/dlc there, and runs
# the command with chroot in a private mount namespace (unshare), so the mounts it makes
# (proc, sys, dev, the CUDA toolkit read-only, the caches) disappear with it even when it
# is killed. What is shared with the host is only what makes a rerun fast without hiding
# a missing install step: ccache's objects and the downloaded .deb files (apt still
# installs every package). The host's installed packages never reach the root.
#
# Needs root (debootstrap, mounts, chroot) and about 8 GB of free disk. Exit status: the
# command's; 75 when the root could not be made (no debootstrap, the package registry
# unreachable, too little disk), so that a caller (.ci/run) can tell "no fresh machine"
# from "the set-up or the tests failed".
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${DLC_FRESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dlc-fresh-machine}"
mirror="${DLC_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${DLC_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
suite=bookworm
rev=HEAD
keep=0
share_ccache=1
refresh_base=0
started=$SECONDS
readonly no_root=75

say() { printf '\033[1m[fresh-machine %4ds]\033[0m %s\n' "$((SECONDS - started))" "$*"; }
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
# The root could not be made: say why, exit with the status callers test for.
cannot_make_root() { say "CANNOT MAKE A FRESH DEBIAN 12 ROOT: $*"; exit "$no_root"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev="${2:?--rev needs a commit}"; shift 2 ;;
    --keep) keep=1; shift ;;
    --no-ccache) share_ccache=0; shift ;;
    --refresh-base) refresh_base=1; shift ;;
    -h|--help) usage ;;
    -*) echo "fresh-machine: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
mode="${1:-}"
[ $# -gt 0 ] && shift
case "$mode" in
  run|test) command=(./dlc.sh "$mode" "$@") ;;
  exec) [ $# -gt 0 ] || { echo "fresh-machine: exec needs a command" >&2; usage; }
        command=("$@") ;;
  *) usage ;;
esac

# --- the host: what making a root needs ---------------------------------------------------
[ "$(id -u)" -eq 0 ] || cannot_make_root "it needs root (debootstrap, mounts, chroot): run it with sudo"
commit="$(git -C "$repo" rev-parse --verify "$rev^{commit}")" ||
  { echo "fresh-machine: '$rev' is not a commit of $repo" >&2; exit 2; }
if [ "$rev" = HEAD ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  say "note: $repo has uncommitted changes; the root gets commit ${commit:0:12} without them"
fi
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap on the host (it makes the root)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap \
    >/dev/null || cannot_make_root "debootstrap is missing and could not be installed"
fi
mkdir -p "$cache/roots" "$cache/apt-archives/partial"
free_kb="$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')"
[ "$free_kb" -ge $((8 * 1024 * 1024)) ] ||
  cannot_make_root "only $((free_kb / 1024)) MB free under $cache, 8 GB needed"

# --- the base system, made once ------------------------------------------------------------
base="$cache/debian12-minbase.tar.gz"
exec 9>"$cache/base.lock"
flock 9 # one maker at a time; the others wait and reuse its tarball
if [ "$refresh_base" = 1 ] || [ ! -s "$base" ]; then
  say "making the base system with debootstrap ($suite, minbase, $mirror)"
  staging="$(mktemp -d "$cache/base.XXXXXX")"
  if ! debootstrap --variant=minbase "$suite" "$staging" "$mirror" >"$cache/debootstrap.log" 2>&1
  then
    tail -5 "$cache/debootstrap.log"
    rm -rf --one-file-system "$staging"
    cannot_make_root "debootstrap failed (log: $cache/debootstrap.log)"
  fi
  rm -f "$staging"/var/cache/apt/archives/*.deb # debootstrap's downloads, not the system
  tar -C "$staging" -czf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf --one-file-system "$staging"
fi
flock -u 9

rootfs="$(mktemp -d "$cache/roots/root.XXXXXX")"
cleanup() {
  local status=$?
  if [ "$keep" = 1 ]; then
    say "kept the root: $rootfs (chroot $rootfs /bin/bash; delete it with rm -rf --one-file-system)"
  elif grep -qF " $rootfs/" /proc/self/mountinfo; then
    # Never delete through a mount point: a bound /dev or toolkit would go with it.
    say "NOT deleting $rootfs: something is still mounted under it"
  else
    rm -rf --one-file-system "$rootfs" "$rootfs.ccache"
  fi
  exit "$status"
}
trap cleanup EXIT
say "unpacking the base system into $rootfs"
tar -C "$rootfs" -xzf "$base"
# The folder becomes "/": mktemp made it private (and the tarball's "." kept that), which
# would lock out every user but root, apt's download sandbox (_apt) among them.
chmod 755 "$rootfs"

# A new Debian 12 machine's package sources; the host's way of reaching them (a proxy)
# comes along, nothing else of the host's apt configuration does.
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security_mirror $suite-security main
EOF
apt-config dump 2>/dev/null | grep -iE '^Acquire::(https?|ftp)::Proxy' | sed 's/$/;/' \
  >"$rootfs/etc/apt/apt.conf.d/01host-proxy" || true
cp -L /etc/resolv.conf "$rootfs/etc/resolv.conf"
cp -L /etc/hosts "$rootfs/etc/hosts" 2>/dev/null || true

say "cloning ${commit:0:12} into /root/dlc"
git clone --quiet --no-hardlinks --no-checkout "$repo" "$rootfs/root/dlc"
git -C "$rootfs/root/dlc" checkout --quiet --detach "$commit"

# The CUDA toolkit where the host has one, at the same path, read-only. /usr/local/cuda
# is usually a link to /usr/local/cuda-X.Y: the root gets the same link.
cuda_source="" cuda_target=""
if [ -d /usr/local/cuda ]; then
  cuda_source="$(readlink -f /usr/local/cuda)"
  cuda_target="$cuda_source"
  mkdir -p "$rootfs$cuda_target"
  if [ -L /usr/local/cuda ]; then ln -s "$(readlink /usr/local/cuda)" "$rootfs/usr/local/cuda"; fi
  say "binding the host's CUDA toolkit read-only: $cuda_source"
else
  say "the host has no /usr/local/cuda: the root builds without CUDA"
fi
ccache_host="${CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")}"
[ "$share_ccache" = 1 ] || ccache_host="$rootfs.ccache"
mkdir -p "$ccache_host" "$rootfs/root/.cache/ccache"

# Inside the private mount namespace: mount, prove the registry answers, run the command.
# The root counts as made once its package lists are fresh (the marker file); a failure
# before that is "no fresh machine", after it the command's own.
inner="$(cat <<'EOF'
set -eu
r="$1"; shift
mount -t proc proc "$r/proc"
mount -o bind,ro /sys "$r/sys"
mount --rbind /dev "$r/dev"
[ -z "$CUDA_SOURCE" ] || mount -o bind,ro "$CUDA_SOURCE" "$r$CUDA_TARGET"
mount --bind "$CCACHE_HOST" "$r/root/.cache/ccache"
mount --bind "$APT_ARCHIVES" "$r/var/cache/apt/archives"
mapfile -d '' passed <"$r/root/.passed-env"
in_root() {
  chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CCACHE_DIR=/root/.cache/ccache "${passed[@]}" "$@"
}
in_root apt-get update -q --error-on=any >"$r/root/apt-update.log" 2>&1 || { tail -5 "$r/root/apt-update.log"; exit 1; }
touch "$r/root/.made"
in_root /bin/bash -c 'cd /root/dlc && exec "$@"' bash "$@"
EOF
)"
# The user's dlc and ctest settings and a proxy reach the command; the rest of the host's
# environment does not.
for name in $(compgen -e); do
  case "$name" in
    DLC_FRESH_*) ;;
    DLC_*|CTEST_*|http_proxy|https_proxy|no_proxy|HTTP_PROXY|HTTPS_PROXY|NO_PROXY)
      printf '%s=%s\0' "$name" "${!name}" ;;
  esac
done >"$rootfs/root/.passed-env"

say "running in the fresh root: ${command[*]}"
status=0
CUDA_SOURCE="$cuda_source" CUDA_TARGET="$cuda_target" CCACHE_HOST="$ccache_host" \
APT_ARCHIVES="$cache/apt-archives" \
  unshare --mount --propagation private /bin/bash -c "$inner" bash "$rootfs" "${command[@]}" ||
  status=$?
[ -e "$rootfs/root/.made" ] ||
  cannot_make_root "it was not ready to use: mounting, or fetching its package lists from $mirror, failed (above)"
if [ "$status" -eq 0 ]; then
  say "passed: ${command[*]} ($((SECONDS - started)) s in all)"
else
  say "FAILED with status $status: ${command[*]} ($((SECONDS - started)) s in all)"
fi
exit "$status"
