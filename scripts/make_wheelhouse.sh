#!/usr/bin/env bash
# Make a wheelhouse for offline / mirror installs: mixedeval's own wheel, every dependency with
# the test extra, and the build backend, as wheels in one directory. Then, with no package index:
#
#   bash scripts/make_wheelhouse.sh [DIR]        # DIR default: docker/wheelhouse (the Docker build uses it)
#   bash scripts/setup.sh --wheelhouse DIR       # here or on the air-gapped machine
#   pip install --no-index --find-links DIR 'mixedeval[test]'    # or without the repository
#
# Nothing is listed here: what goes in is pyproject.toml's dependencies, its test extra and its
# [build-system] requires (an editable install builds mixedeval with them). Run it on a machine that
# reaches the index (pip's own settings apply, e.g. PIP_INDEX_URL for a mirror) with the target's
# Python: wheels are specific to the platform, and pip picks versions by the exact interpreter
# version (a package may require Python >= 3.11.5, which Debian bookworm's 3.11.2 is not). pip runs
# in a throw-away virtual environment of that interpreter. Packages published only as source (rpy2)
# are built into wheels here, which needs R's headers (r-base-dev, installed by scripts/setup.sh).
# At the end the wheelhouse is checked: a dry run resolves mixedeval[test] and the build backend
# from it alone.
# Environment: MIXEDEVAL_PYTHON, the target's interpreter (default /usr/bin/python3: on Debian
# bookworm the one scripts/setup.sh and the image use; else python3).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)

case "${1:-}" in -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;; esac
[ "$#" -le 1 ] || { echo "make_wheelhouse: one argument at most, the directory (see --help)" >&2; exit 2; }
DIR="${1:-$REPO_ROOT/docker/wheelhouse}"

say() { echo "make_wheelhouse: $*"; }
die() { echo "make_wheelhouse: error: $*" >&2; exit 1; }

PY="${MIXEDEVAL_PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
fi
"$PY" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  || die "$PY is not Python >= 3.11 with venv (set MIXEDEVAL_PYTHON; Debian: apt-get install python3-venv)"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" -m venv "$WORK/venv" || die "$PY -m venv failed"

mkdir -p "$DIR"
DIR=$(cd -- "$DIR" && pwd)
mapfile -t BUILD_REQUIRES < <("$PY" - "$REPO_ROOT/pyproject.toml" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print(*tomllib.load(f)["build-system"]["requires"], sep="\n")
PY
)
START=$(date +%s)
PIP=("$WORK/venv/bin/python" -m pip --disable-pip-version-check)
log="${TMPDIR:-/tmp}/mixedeval-wheelhouse.log"
rm -f "$DIR"/mixedeval-*.whl   # this checkout's wheel replaces an older one
say "pip wheel '${REPO_ROOT}[test]' ${BUILD_REQUIRES[*]} -> $DIR ($("$PY" -c 'import sys, platform; print(f"Python {sys.version.split()[0]}, {platform.machine()}")'))"
if ! "${PIP[@]}" wheel -q --progress-bar off -w "$DIR" "${REPO_ROOT}[test]" "${BUILD_REQUIRES[@]}" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "pip wheel failed (full log: $log)"
fi

# the check: everything resolves from the wheelhouse alone, with no index
if ! "${PIP[@]}" install -q --dry-run --ignore-installed --no-index --find-links "$DIR" \
       "${REPO_ROOT}[test]" "${BUILD_REQUIRES[@]}" >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  die "the wheelhouse $DIR is incomplete (full log: $log)"
fi
say "$(find "$DIR" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$DIR" | cut -f1), in $(( $(date +%s) - START )) s: $DIR"
