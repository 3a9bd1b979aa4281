#!/usr/bin/env bash
# mixedeval set-up: the ONE place that says what gets installed (CI and docker/Dockerfile run it too).
#
#   bash scripts/setup.sh                 # Debian packages (as root), then ./.venv with mixedeval[test]
#   bash scripts/setup.sh --no-browser    # the same without Chromium (only the report test needs it)
#   bash scripts/setup.sh --pin           # Debian R packages at exactly the versions in renv.lock
#   bash scripts/setup.sh --system-only   # Debian packages only, no virtual environment
#   bash scripts/setup.sh --list-apt-packages   # print what would be installed (pkg or pkg=version)
#   bash scripts/setup.sh --no-image-tools      # without podman, runc, debootstrap (only tests/test_image.py needs them)
#   bash scripts/setup.sh --wheelhouse DIR      # pip offline: --no-index --find-links DIR
#
# Environment: MIXEDEVAL_SETUP_BROWSER=0 (= --no-browser), MIXEDEVAL_PIN_FROM_LOCK=1 (= --pin),
# MIXEDEVAL_SETUP_IMAGE_TOOLS=0 (= --no-image-tools), MIXEDEVAL_WHEELHOUSE=DIR (= --wheelhouse),
# MIXEDEVAL_PYTHON (interpreter for a new .venv, default python3), CI=true (non-interactive).
# A wheelhouse is made by scripts/make_wheelhouse.sh on a machine that reaches the package index.
# For the tests: MIXEDEVAL_SETUP_ASSUME_NONROOT=1, MIXEDEVAL_SETUP_OS_RELEASE=FILE.
#
# What: Debian bookworm's R and the R packages in scripts/r-packages.txt, Python 3.11 with venv
# and headers, Chromium (headless report rendering test), podman, runc and debootstrap (the image
# test builds and runs docker/Dockerfile); then `pip install -e '.[test]'` into
# ./.venv at the repository root. Idempotent: dpkg-query decides what is missing (no apt-get
# update when nothing is); pip is skipped while a stamp with the hash of pyproject.toml matches.
# Not root or not Debian, with something missing: prints exactly what to install and exits 1.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
R_PACKAGES_FILE="$SCRIPT_DIR/r-packages.txt"
LOCK_FILE="$REPO_ROOT/renv.lock"
VENV="$REPO_ROOT/.venv"
STAMP="$VENV/.setup-stamp"
PIP_TARGET=".[test]"
PYTHON_DEBS=(python3 python3-venv python3-dev)
BROWSER_DEBS=(chromium fonts-dejavu-core)
IMAGE_DEBS=(podman runc debootstrap)
LOG_DIR="${TMPDIR:-/tmp}"
APT_FLAGS=()

BROWSER="${MIXEDEVAL_SETUP_BROWSER:-1}"
PIN="${MIXEDEVAL_PIN_FROM_LOCK:-0}"
IMAGE_TOOLS="${MIXEDEVAL_SETUP_IMAGE_TOOLS:-1}"
WHEELHOUSE="${MIXEDEVAL_WHEELHOUSE:-}"
SYSTEM_ONLY=0
LIST_ONLY=0

usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ "$#" -gt 0 ]; do
  case "$1" in
    --no-browser) BROWSER=0 ;;
    --pin) PIN=1 ;;
    --with-image-tools) IMAGE_TOOLS=1 ;;
    --no-image-tools) IMAGE_TOOLS=0 ;;
    --wheelhouse) [ "$#" -ge 2 ] || { echo "setup: --wheelhouse needs a directory" >&2; exit 2; }
                  WHEELHOUSE="$2"; shift ;;
    --wheelhouse=*) WHEELHOUSE="${1#--wheelhouse=}" ;;
    --system-only) SYSTEM_ONLY=1 ;;
    --list-apt-packages) LIST_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }
START=$(date +%s)

# --- what to install ---------------------------------------------------------------------------
R_DEBS=()
R_NAMES=()
while read -r deb rname _; do
  case "$deb" in ''|'#'*) continue ;; esac
  R_DEBS+=("$deb")
  [ "${rname:--}" = "-" ] || R_NAMES+=("$rname")
done < "$R_PACKAGES_FILE"
[ "${#R_DEBS[@]}" -gt 0 ] || die "no packages listed in $R_PACKAGES_FILE"

WANTED=("${R_DEBS[@]}" "${PYTHON_DEBS[@]}")
[ "$BROWSER" = "0" ] || WANTED+=("${BROWSER_DEBS[@]}")
[ "$IMAGE_TOOLS" = "1" ] && WANTED+=("${IMAGE_DEBS[@]}")

# --- where are we ------------------------------------------------------------------------------
OS_RELEASE="${MIXEDEVAL_SETUP_OS_RELEASE:-/etc/os-release}"
OS_ID=""
OS_CODENAME=""
if [ -r "$OS_RELEASE" ]; then
  # shellcheck source=/dev/null
  OS_ID=$(. "$OS_RELEASE" && echo "${ID:-}")
  # shellcheck source=/dev/null
  OS_CODENAME=$(. "$OS_RELEASE" && echo "${VERSION_CODENAME:-}")
fi
IS_DEBIAN=0
if [ "$OS_ID" = "debian" ] && command -v dpkg-query >/dev/null && command -v apt-get >/dev/null; then
  IS_DEBIAN=1
fi
IS_ROOT=0
if [ "$(id -u)" = "0" ] && [ "${MIXEDEVAL_SETUP_ASSUME_NONROOT:-0}" != "1" ]; then IS_ROOT=1; fi
if [ "${CI:-}" = "true" ] || [ ! -t 0 ]; then export DEBIAN_FRONTEND=noninteractive; fi

# pip's index options: the package index, or only the wheelhouse (offline / mirror builds)
PIP_INDEX=()
if [ -n "$WHEELHOUSE" ]; then
  WHEELHOUSE=$(cd -- "$WHEELHOUSE" 2>/dev/null && pwd) || die "--wheelhouse: no such directory: $WHEELHOUSE"
  compgen -G "$WHEELHOUSE/*.whl" >/dev/null \
    || die "--wheelhouse: no wheels in $WHEELHOUSE (make them with: bash scripts/make_wheelhouse.sh $WHEELHOUSE)"
  PIP_INDEX=(--no-index --find-links "$WHEELHOUSE")
fi

pip_line() {
  echo "  cd $REPO_ROOT && ${MIXEDEVAL_PYTHON:-python3} -m venv .venv && .venv/bin/python -m pip install ${PIP_INDEX[*]}${PIP_INDEX[*]:+ }-e '$PIP_TARGET'"
}

apt_install() {  # apt_install PKG[=VERSION]... ; quiet, full log on failure
  local log="$LOG_DIR/mixedeval-setup-apt.log"
  say "apt-get install ($#): $*"
  : > "$log"
  apt-get update -qq >>"$log" 2>&1 || say "apt-get update reported problems (see $log); trying the install anyway"
  if ! apt-get install -y -q --no-install-recommends "${APT_FLAGS[@]}" "$@" >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "apt-get install failed (full log: $log)"
  fi
  hash -r
}

# installed version of each Debian package (empty when not installed)
declare -A INSTALLED=()
read_installed() {
  INSTALLED=()
  local pkg status version
  while IFS=$'\t' read -r pkg status version; do
    # an if, not `[ ] && ...`: a last line that is not installed ("un") must not end the loop, and
    # with it the function and `set -e`'s script, with status 1
    if [ "${status:0:2}" = "ii" ]; then INSTALLED["$pkg"]="$version"; fi
  done < <(dpkg-query -W -f='${Package}\t${db:Status-Abbrev}\t${Version}\n' "$@" 2>/dev/null || true)
  return 0
}

# pins from renv.lock: "deb version" lines, for R itself and every R package recorded there
declare -A PINS=()
read_pins() {
  [ -r "$LOCK_FILE" ] || die "--pin: $LOCK_FILE not found"
  local py
  py=$(command -v python3 || true)
  [ -n "$py" ] || die "--pin needs python3 to read $LOCK_FILE"
  local deb version
  while read -r deb version; do PINS["$deb"]="$version"; done < <("$py" - "$LOCK_FILE" <<'PY'
import json, sys
lock = json.load(open(sys.argv[1], encoding="utf-8"))
pins = dict(lock["R"].get("DebianPackages", {}))
for rec in lock["Packages"].values():
    if "DebianPackage" in rec:
        pins[rec["DebianPackage"]] = rec["DebianVersion"]
for deb in sorted(pins):
    print(deb, pins[deb])
PY
)
  [ "${#PINS[@]}" -gt 0 ] || die "--pin: no Debian versions recorded in $LOCK_FILE (regenerate it: Rscript scripts/write_renv_lock.R)"
  local d
  for d in "${R_DEBS[@]}"; do
    [ -n "${PINS[$d]:-}" ] || die "--pin: $d is listed in scripts/r-packages.txt but has no version in renv.lock (regenerate it: Rscript scripts/write_renv_lock.R)"
  done
}

# the install specs (pkg or pkg=version) for everything wanted; pins cover R's dependencies too
specs() {
  local d
  if [ "$PIN" = "1" ]; then
    for d in "${!PINS[@]}"; do echo "$d=${PINS[$d]}"; done | sort
    for d in "${WANTED[@]}"; do [ -n "${PINS[$d]:-}" ] || echo "$d"; done
  else
    printf '%s\n' "${WANTED[@]}"
  fi
}

# --- system packages: Debian -------------------------------------------------------------------
system_debian() {
  if [ "$PIN" = "1" ] && ! command -v python3 >/dev/null; then
    # the lock is JSON; Debian's python3 (wanted anyway) reads it
    [ "$IS_ROOT" = "1" ] || { debian_instructions "${PYTHON_DEBS[@]}"; exit 1; }
    apt_install "${PYTHON_DEBS[@]}"
  fi
  [ "$PIN" = "1" ] && read_pins
  local all=() todo=() spec pkg ver
  mapfile -t all < <(specs)
  read_installed "${all[@]%%=*}"
  for spec in "${all[@]}"; do
    pkg="${spec%%=*}"
    ver="${spec#*=}"
    if [ -z "${INSTALLED[$pkg]:-}" ]; then todo+=("$spec")
    elif [ "$spec" != "$pkg" ] && [ "${INSTALLED[$pkg]}" != "$ver" ]; then todo+=("$spec")
    fi
  done
  if [ "${#todo[@]}" -eq 0 ]; then
    say "Debian packages: all ${#all[@]} present$([ "$PIN" = "1" ] && echo ' at the versions in renv.lock')"
    return 0
  fi
  if [ "$IS_ROOT" != "1" ]; then debian_instructions "${todo[@]}"; exit 1; fi
  [ "$OS_CODENAME" = "bookworm" ] || say "note: written for Debian bookworm, this is '${OS_CODENAME:-unknown}'"
  [ "$PIN" = "1" ] && APT_FLAGS+=(--allow-downgrades)
  apt_install "${todo[@]}"
}

debian_instructions() {
  echo "setup: missing Debian packages, and this script is not running as root:"
  echo "  $*"
  echo "Install them as root:"
  echo "  apt-get update && apt-get install -y --no-install-recommends $*"
  echo "then create the virtual environment (or run this script again, which does it):"
  pip_line
}

# --- system packages: not Debian ---------------------------------------------------------------
system_other() {
  local problems=()
  local py="${MIXEDEVAL_PYTHON:-python3}"
  if ! "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    problems+=("Python >= 3.11 with venv ($py)")
  fi
  if ! command -v Rscript >/dev/null; then
    problems+=("R (Rscript)")
  else
    local missing
    missing=$(Rscript -e 'p <- commandArgs(TRUE); cat(p[!vapply(p, requireNamespace, TRUE, quietly = TRUE)])' \
      "${R_NAMES[@]}" 2>/dev/null || echo "${R_NAMES[*]}")
    [ -z "$missing" ] || problems+=("R packages: $missing")
  fi
  if [ "$BROWSER" != "0" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
     && ! command -v google-chrome >/dev/null; then
    problems+=("Chromium (or run with --no-browser)")
  fi
  if [ "${#problems[@]}" -eq 0 ]; then
    say "not Debian (${OS_ID:-unknown}): R, the R packages and Python are present, going on"
    return 0
  fi
  local rvec
  rvec=$(printf '"%s", ' "${R_NAMES[@]}")
  echo "setup: this is not Debian (${OS_ID:-unknown}), so nothing is installed automatically. Missing:"
  printf '  - %s\n' "${problems[@]}"
  echo "On Debian bookworm, as root, this script would run:"
  echo "  apt-get update && apt-get install -y --no-install-recommends ${WANTED[*]}"
  echo "Elsewhere, install R >= 4.2 and, in R:"
  echo "  install.packages(c(${rvec%, }))"
  echo "then:"
  pip_line
  exit 1
}

if [ "$LIST_ONLY" = "1" ]; then
  [ "$PIN" = "1" ] && read_pins
  specs
  exit 0
fi

if [ "$IS_DEBIAN" = "1" ]; then system_debian; else system_other; fi
[ "$SYSTEM_ONLY" = "1" ] && { say "done (system only) in $(( $(date +%s) - START )) s"; exit 0; }

# --- Python: ./.venv with mixedeval[test] ------------------------------------------------------
venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if ! venv_ok; then
  py="${MIXEDEVAL_PYTHON:-python3}"
  "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
    || die "$py is not Python >= 3.11 with venv/ensurepip (Debian: apt-get install ${PYTHON_DEBS[*]}; or set MIXEDEVAL_PYTHON)"
  say "creating $VENV with $("$py" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$py" -m venv --clear "$VENV"
fi
stamp_value=$( { sha256sum < "$REPO_ROOT/pyproject.toml"; echo "$PIP_TARGET $REPO_ROOT${PIP_INDEX[*]:+ ${PIP_INDEX[*]}}";
                 "$VENV/bin/python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$stamp_value" ] && [ -x "$VENV/bin/mixedeval" ]; then
  say "Python environment: up to date ($VENV)"
else
  log="$LOG_DIR/mixedeval-setup-pip.log"
  say "pip install ${PIP_INDEX[*]}${PIP_INDEX[*]:+ }-e '$PIP_TARGET' into $VENV"
  if ! (cd "$REPO_ROOT" && "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
          --progress-bar off "${PIP_INDEX[@]}" -e "$PIP_TARGET") >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "pip install failed (full log: $log)"
  fi
  echo "$stamp_value" > "$STAMP"
fi
say "done in $(( $(date +%s) - START )) s"
