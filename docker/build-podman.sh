#!/usr/bin/env bash
# Build the reproducibility image with podman, where there is no Docker engine and no registry:
# the base image comes from debootstrap, the Python packages from a wheelhouse made on this host.
# tests/test_image.py and benchmarks/bench_image.py build through this script.
#
#   bash docker/build-podman.sh                        # image mixedeval:latest
#   bash docker/build-podman.sh --tag T --with-browser # WITH_BROWSER=1 (Chromium: the test suite runs inside)
#   bash docker/build-podman.sh --online               # no wheelhouse: pip uses the package index in the build
#
# Steps: (1) podman, runc and debootstrap must be installed (bash scripts/setup.sh --with-image-tools);
# (2) the base image named by the Dockerfile's FROM (debian:bookworm-YYYYMMDD) is made with
# `debootstrap --variant=minbase bookworm` and `podman import`, with the official image's apt
# sources (deb822, security updates included); the rootfs tarball is cached in
# $MIXEDEVAL_IMAGE_CACHE (default /var/tmp/mixedeval-image-cache) and the image is labelled, so
# both are reused while the inputs (suite, variant, mirror, debootstrap version, sources) are the
# same; (3) the container runtime is tried once (`podman run BASE true`): when it cannot start, the
# script says why and exits 1; (4) docker/wheelhouse is filled by scripts/make_wheelhouse.sh unless
# its stamp (pyproject.toml, that script, the target Python's version) matches; (5) `podman build` of docker/Dockerfile
# with the repository as context. The runtime is runc (crun fails on hybrid cgroup hierarchies)
# with cgroupfs; the build uses the host network (apt-get in the Debian layer) and explicit ulimits
# (podman's default nproc=32768 can exceed what a nested container may set). Builds on one machine
# take turns (a lock in the cache directory), and each builds from a snapshot of the repository
# taken at its start (without .git, .venv and caches), so edits made during a build do not mix.
# The base image's rootfs is debootstrapped into a directory named for the run
# (rootfs-<key>.<pid>.<random>.tmp) and published as rootfs-<key>.tar by an atomic rename, so two
# runs never share a half-built rootfs even without the lock; the second run reuses the tarball.
# Environment: MIXEDEVAL_DEBIAN_MIRROR (default http://deb.debian.org/debian), MIXEDEVAL_IMAGE_CACHE,
# MIXEDEVAL_PYTHON (the image's Python for the wheelhouse; default /usr/bin/python3, i.e. bookworm's).
# The podman flags for `podman run` are printed at the end (PODMAN_RUN=...).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
DOCKERFILE="$SCRIPT_DIR/Dockerfile"
WHEELHOUSE="$SCRIPT_DIR/wheelhouse"
CACHE="${MIXEDEVAL_IMAGE_CACHE:-/var/tmp/mixedeval-image-cache}"
MIRROR="${MIXEDEVAL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
VARIANT=minbase
TAG=mixedeval:latest
WITH_BROWSER=0
ONLINE=0

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    --tag) [ "$#" -ge 2 ] || { echo "build-podman: --tag needs a name" >&2; exit 2; }; TAG="$2"; shift ;;
    --with-browser) WITH_BROWSER=1 ;;
    --online) ONLINE=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build-podman: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "build-podman: $*"; }
die() { echo "build-podman: error: $*" >&2; exit 1; }
START=$(date +%s)

# --- 1. tools ----------------------------------------------------------------------------------
missing=()
for tool in podman runc debootstrap; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] || die "not installed: ${missing[*]} (as root: bash scripts/setup.sh --with-image-tools)"
[ "$(id -u)" = "0" ] || die "debootstrap and this podman set-up need root"
PATH="$PATH:/usr/sbin:/sbin"
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
NOFILE=$(ulimit -Hn)
[ "$NOFILE" = "unlimited" ] && NOFILE=1048576
ULIMITS=(--ulimit "nofile=$NOFILE:$NOFILE" --ulimit nproc=4096:4096)

# one build at a time on this machine (the base image, the wheelhouse and the logs are shared)
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  say "waiting for another build on this machine to finish ($CACHE/.lock)"
  flock 9
fi

# --- 2. base image -----------------------------------------------------------------------------
BASE=$(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$DOCKERFILE" | head -n 1)
[ -n "$BASE" ] || die "no FROM line in $DOCKERFILE"
SOURCES="Types: deb
URIs: ${MIRROR}
Suites: ${SUITE} ${SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: ${SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
KEY=$(printf '%s\n' "$SUITE" "$VARIANT" "$MIRROR" "$(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || debootstrap --version)" \
        "$SOURCES" | sha256sum | cut -c1-16)
have=$(podman image inspect --format '{{ index .Labels "org.mixedeval.rootfs" }}' "$BASE" 2>/dev/null || true)
if [ "$have" = "$KEY" ]; then
  say "base image $BASE: cached (rootfs $KEY)"
else
  mkdir -p "$CACHE"
  tarball="$CACHE/rootfs-$KEY.tar"
  if [ -s "$tarball" ]; then
    say "rootfs $KEY: cached ($tarball)"
  else
    # per-run names (this run's pid and a random suffix): even a run that got past the lock (another
    # cache path to the same directory, a lock on a filesystem without flock) never debootstraps
    # into, or tars from, another run's directory; the finished tarball appears by an atomic mv
    # directories of runs that were killed (SIGKILL skips the trap): rootfs-<key>.<pid>.<random>.tmp
    # whose pid is gone (and the unnamed rootfs-<key>.tmp of older versions of this script)
    for stale in "$CACHE"/rootfs-*.tmp; do
      [ -e "$stale" ] || continue
      pid=$(basename "$stale" | awk -F. 'NF >= 4 { print $(NF - 2) }')
      if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -rf "$stale" "$stale.tar.part" "$stale.log"; fi
    done
    rootfs=$(mktemp -d --suffix=.tmp "$CACHE/rootfs-$KEY.$$.XXXXXX")
    trap 'rm -rf "$rootfs" "$rootfs.tar.part"' EXIT
    say "debootstrap --variant=$VARIANT $SUITE from $MIRROR (into $rootfs)"
    log="$rootfs.log"
    debootstrap --variant="$VARIANT" "$SUITE" "$rootfs" "$MIRROR" >"$log" 2>&1 \
      || { tail -n 30 "$log" >&2; die "debootstrap failed (full log: $log)"; }
    rm -f "$rootfs/etc/apt/sources.list"
    printf '%s\n' "$SOURCES" > "$rootfs/etc/apt/sources.list.d/debian.sources"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar --numeric-owner -C "$rootfs" -cf "$rootfs.tar.part" . && mv "$rootfs.tar.part" "$tarball"
    mv "$log" "$CACHE/debootstrap.log"
    rm -rf "$rootfs"
    trap - EXIT
  fi
  say "podman import $tarball as $BASE"
  podman import --change "LABEL org.mixedeval.rootfs=$KEY" "$tarball" "$BASE" >/dev/null
fi

# --- 3. can a container start here? ------------------------------------------------------------
if ! err=$("${PODMAN[@]}" run --rm --network=none "${ULIMITS[@]}" "$BASE" true 2>&1); then
  die "the container runtime cannot start a container here (${PODMAN[*]} run $BASE true): $err"
fi

# --- 4. a snapshot of the repository as the build context; the wheelhouse ----------------------
CTX=$(mktemp -d "$CACHE/context.XXXXXX")
trap 'rm -rf "$CTX"' EXIT
tar -C "$REPO_ROOT" --exclude=./.git --exclude=./.venv --exclude=./docker/wheelhouse --exclude=__pycache__ \
    --exclude=.pytest_cache --exclude=.hypothesis --exclude='*.egg-info' -cf - . | tar -C "$CTX" -xf -
mkdir -p "$CTX/docker/wheelhouse"
BUILD_ARGS=(--build-arg "WITH_BROWSER=$WITH_BROWSER")
if [ "$ONLINE" = "1" ]; then
  if compgen -G "$WHEELHOUSE/*.whl" >/dev/null; then
    die "--online, but $WHEELHOUSE holds wheels (the build would use them): remove them first"
  fi
else
  py="${MIXEDEVAL_PYTHON:-/usr/bin/python3}"
  [ -x "$py" ] || py=python3
  stamp=$( { cat "$CTX/pyproject.toml" "$CTX/scripts/make_wheelhouse.sh";
             "$py" -c 'import sys, platform; print(sys.version, platform.machine())'; } | sha256sum | cut -c1-16)
  if [ -f "$WHEELHOUSE/.stamp" ] && [ "$(cat "$WHEELHOUSE/.stamp")" = "$stamp" ] && compgen -G "$WHEELHOUSE/*.whl" >/dev/null; then
    say "wheelhouse: up to date ($WHEELHOUSE)"
  else
    rm -f "$WHEELHOUSE"/*.whl "$WHEELHOUSE/.stamp"   # no stale versions beside the new ones
    MIXEDEVAL_PYTHON="$py" bash "$CTX/scripts/make_wheelhouse.sh" "$WHEELHOUSE"
    echo "$stamp" > "$WHEELHOUSE/.stamp"
  fi
  cp -l "$WHEELHOUSE"/*.whl "$CTX/docker/wheelhouse/" 2>/dev/null || cp "$WHEELHOUSE"/*.whl "$CTX/docker/wheelhouse/"
fi

# --- 5. build ----------------------------------------------------------------------------------
say "podman build -t $TAG (WITH_BROWSER=$WITH_BROWSER, $([ "$ONLINE" = 1 ] && echo 'package index' || echo 'wheelhouse'))"
log="$CACHE/build-${TAG//[^A-Za-z0-9_.-]/_}.log"
mkdir -p "$CACHE"
t0=$(date +%s)
if ! "${PODMAN[@]}" build --format docker --pull=never --network=host "${ULIMITS[@]}" "${BUILD_ARGS[@]}" \
       -f "$CTX/docker/Dockerfile" -t "$TAG" "$CTX" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "podman build failed (full log: $log)"
fi
size=$(podman image inspect --format '{{.Size}}' "$TAG")
say "built $TAG in $(( $(date +%s) - t0 )) s, $(( size / 1000000 )) MB (total $(( $(date +%s) - START )) s; log: $log)"
echo "PODMAN_RUN=${PODMAN[*]} run --rm ${ULIMITS[*]}"
