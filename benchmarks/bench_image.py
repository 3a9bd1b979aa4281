"""Issue 17 benchmark: the reproducibility image as the test suite's environment.

Builds the image with ``WITH_BROWSER=1`` (Chromium, so the report-rendering test runs too) through
``docker/build-podman.sh`` (podman, debootstrap base image, host-made wheelhouse; see the README's
Docker section), then runs the whole test suite inside it except the image tests themselves:

    podman run --rm --network=none -v docker/wheelhouse:/opt/wheelhouse:ro \\
        -e PIP_NO_INDEX=1 -e PIP_FIND_LINKS=/opt/wheelhouse \\
        --entrypoint .venv/bin/python IMAGE -m pytest -q -p no:cacheprovider -m "not image"

No network: the one test that builds a wheel (``test_wheel_carries_the_r_library_and_data``) gets
the build backend from the mounted wheelhouse, like the image build. Prints the build time (a
rebuild with podman's layer cache is quick; ``--no-cache`` measures the full build), the image size,
the suite's time and its pytest summary; exits with pytest's exit code.

Run (as root, after ``bash scripts/setup.sh --with-image-tools``):
    .venv/bin/python benchmarks/bench_image.py [--no-cache] [-- PYTEST-ARGS...]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAG = "localhost/mixedeval-bench:browser"


def build(no_cache: bool) -> tuple[float, list[str]]:
    """Build the WITH_BROWSER=1 image; returns (seconds, the `podman run` prefix)."""
    if no_cache:
        subprocess.run(["podman", "rmi", "-f", TAG], capture_output=True)
        subprocess.run(["podman", "image", "prune", "-f"], capture_output=True)
    t0 = time.perf_counter()
    out = subprocess.run(["bash", str(ROOT / "docker" / "build-podman.sh"), "--tag", TAG, "--with-browser"],
                         capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    sys.stderr.write(out.stdout + out.stderr)
    if out.returncode != 0:
        raise SystemExit(f"bench_image: the build failed (exit {out.returncode})")
    prefix = next(line.split("=", 1)[1] for line in out.stdout.splitlines() if line.startswith("PODMAN_RUN="))
    return seconds, prefix.split()


def image_size() -> int:
    out = subprocess.run(["podman", "image", "inspect", "--format", "{{.Size}}", TAG],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def run_suite(prefix: list[str], pytest_args: list[str]) -> tuple[float, int, str]:
    """The test suite inside the image, no network; returns (seconds, exit code, pytest's summary)."""
    wheelhouse = ROOT / "docker" / "wheelhouse"
    cmd = [*prefix, "--network=none", "-v", f"{wheelhouse}:/opt/wheelhouse:ro",
           "-e", "PIP_NO_INDEX=1", "-e", "PIP_FIND_LINKS=/opt/wheelhouse",
           "--entrypoint", ".venv/bin/python", TAG,
           "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not image", *pytest_args]
    print("bench_image: " + " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    sys.stderr.write(proc.stdout[-20000:] + proc.stderr[-5000:])
    lines = [ln for ln in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    return seconds, proc.returncode, (lines[-1].strip("= ") if lines else "no pytest summary")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-cache", action="store_true", help="remove the image first: time the full build")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    build_s, prefix = build(args.no_cache)
    size = image_size()
    suite_s, rc, summary = run_suite(prefix, args.pytest_args)
    result = {"image": TAG, "build_seconds": round(build_s, 1), "image_size_mb": round(size / 1e6),
              "suite_seconds": round(suite_s, 1), "pytest_exit_code": rc, "pytest_summary": summary}
    print(json.dumps(result, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(main())
