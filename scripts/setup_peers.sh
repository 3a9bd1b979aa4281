#!/usr/bin/env bash
# The peers' packages that mixedeval's parity tests compare against but cannot share its
# environment: arena-rank 0.1.1 (LMArena's ranking code, JAX) pins numpy 2.3.3.
#
#   bash scripts/setup_peers.sh                    # ./.venv-peers with arena-rank==0.1.1
#   bash scripts/setup_peers.sh --wheelhouse DIR   # the same offline (pip --no-index --find-links DIR)
#
# tests/test_arena_rank_parity.py and benchmarks/bench_bradley_terry.py --sandwich run arena-rank
# in this interpreter (.venv-peers/bin/python), or in $MIXEDEVAL_ARENA_PYTHON when set; without
# either the parity test is skipped. Idempotent: nothing is installed when arena-rank 0.1.1 is
# already there. Environment: MIXEDEVAL_PYTHON (interpreter for the new venv, default python3).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
VENV="$REPO_ROOT/.venv-peers"
PY="${MIXEDEVAL_PYTHON:-python3}"
PIN="arena-rank==0.1.1"
PIP_ARGS=()

while [ $# -gt 0 ]; do
    case "$1" in
        --wheelhouse) PIP_ARGS=(--no-index --find-links "$2"); shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "setup_peers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c \
        'import importlib.metadata as m, sys; sys.exit(m.version("arena-rank") != "0.1.1")' 2>/dev/null; then
    echo "setup_peers.sh: $VENV has $PIN"
    exit 0
fi
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "${PIP_ARGS[@]}" "$PIN"
"$VENV/bin/python" -c 'import arena_rank, importlib.metadata as m; print("arena-rank", m.version("arena-rank"))'
echo "setup_peers.sh: $VENV ready (tests/test_arena_rank_parity.py uses it)"
