"""The reproducibility image, built and run: docker/Dockerfile through podman (docker/build-podman.sh:
base image by debootstrap, Python packages from a wheelhouse made on this host, no registry and no
package index needed), `mixedeval demo` in the container with /out mounted and no network, and its
key numbers against the same analysis computed here on the host.

The first run on a machine bootstraps everything (debootstrap, wheelhouse, both image layers);
reruns reuse the cached rootfs, the wheelhouse and podman's layer cache. Without podman, runc or
debootstrap (`bash scripts/setup.sh --with-image-tools`, which .ci/run runs), or when no container
can start here, the image tests fail and say why; they do not skip.

The setup-script options behind it (the wheelhouse, the image tools) are checked without podman.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import mixedeval as me
from mixedeval.demo import ANNOTATION_MODE, TER_FORMULA, TER_NULL

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "docker" / "build-podman.sh"
SETUP = ROOT / "scripts" / "setup.sh"
MAKE_WHEELHOUSE = ROOT / "scripts" / "make_wheelhouse.sh"
TAG = "localhost/mixedeval-test:image"
IMAGE_DEBS = ["podman", "runc", "debootstrap"]

image = pytest.mark.image


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIXEDEVAL_")}
    env.update(extra)
    return env


# --- the image -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_image() -> list[str]:
    """Build the image (cached layers make a rebuild quick); returns the `podman run` prefix."""
    t0 = time.perf_counter()
    out = subprocess.run(["bash", str(BUILD), "--tag", TAG], capture_output=True, text=True, timeout=3600,
                         env=_env())
    if out.returncode != 0:
        pytest.fail(f"building the image failed (exit {out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    prefix = next(line.split("=", 1)[1] for line in out.stdout.splitlines() if line.startswith("PODMAN_RUN="))
    print(f"\n{out.stdout.strip()}\nimage ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return prefix.split()


@pytest.fixture(scope="module")
def demo_in_image(built_image, tmp_path_factory) -> tuple[dict, Path]:
    """`mixedeval demo --json` in the container, no network, /out mounted: (its JSON, the out dir)."""
    out_dir = tmp_path_factory.mktemp("out")
    cmd = [*built_image, "--network=none", "-v", f"{out_dir}:/out", TAG,
           "demo", "--out", "/out/report.html", "--json", "--quiet"]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    print(f"demo in the container: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    assert run.returncode == 0, f"{' '.join(cmd)}\nexit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    return json.loads(run.stdout), out_dir


@pytest.fixture(scope="module")
def host_results() -> dict:
    """The demo's key analyses on the host, through the same public API the demo calls."""
    df = me.datasets.load("kreutzer_ter")
    fit = me.lmm(TER_FORMULA, df, reml=True)
    null = me.lmm(TER_NULL, df, reml=True)
    ann = me.datasets.load("kreutzer_annotation")
    ann = ann[ann["mode"] == ANNOTATION_MODE]
    vca = me.variance_components(ann, score="score", object="sentence", facets=["rater", "occasion"],
                                 interactions="all")
    return {"lrt": me.compare(null, fit).table, "emmeans": fit.emmeans("system").table, "vca": vca.table}


NUMERIC_DEBS = ["r-base-core", "libblas3", "liblapack3", "libgfortran5", "libc6"]


@pytest.fixture(scope="module")
def library_versions(built_image) -> dict[str, str]:
    """The Debian versions of R and the numeric libraries under it, host and image side by side
    (shown when numbers differ: the 1e-8 below assumes the same libraries)."""
    query = ["dpkg-query", "-W", "-f=${Package} ${Version}\n", *NUMERIC_DEBS]
    host = subprocess.run(query, capture_output=True, text=True).stdout
    img = subprocess.run([*built_image, "--network=none", "--entrypoint", query[0], TAG, *query[1:]],
                         capture_output=True, text=True).stdout
    return {"host": host.strip(), "image": img.strip()}


def _close(got: list, want: list, rtol: float, what: str, libs: dict[str, str]) -> None:
    got_a, want_a = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert np.allclose(got_a, want_a, rtol=rtol, atol=0), (what, got_a, want_a, np.abs(got_a / want_a - 1), libs)


# Tolerance: the container runs the same computation as the host on the same data, with R and every
# R package at the versions in renv.lock (the host's, checked by test_install.py), the same BLAS,
# LAPACK and libc versions (library_versions; the image has Debian's reference BLAS like the host),
# the same numpy and the same CPU, so each fit takes the same optimizer path and even the optimizer
# outputs (EMMs, variance components) are one-fit quantities here: 1e-8, not OPTIMIZER_RTOL.
# Measured on 2026-11-23: every compared number, and the fixed effects, agreed to the last bit.
RTOL = 1e-8


@image
@pytest.mark.slow
def test_demo_report_is_written(demo_in_image):
    result, out_dir = demo_in_image
    report = out_dir / "report.html"
    assert report.is_file() and result["report"] == "/out/report.html"
    html = report.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and len(html) > 50_000
    assert "Kreutzer" in html and "likelihood" in html.lower()
    assert result["failures"] == {}


@image
@pytest.mark.slow
def test_demo_glrt_chisq_equals_host(demo_in_image, host_results, library_versions):
    lrt = demo_in_image[0]["tables"]["likelihood_ratio_test"]
    want = host_results["lrt"]
    assert [row["model"] for row in lrt] == list(want["model"])
    for col in ("chisq", "p_value", "loglik", "deviance"):
        got = [row[col] for row in lrt][1:]
        _close(got, list(want[col].iloc[1:]), RTOL, col, library_versions)


@image
@pytest.mark.slow
def test_demo_emmeans_equal_host(demo_in_image, host_results, library_versions):
    emm = demo_in_image[0]["tables"]["emmeans"]
    want = host_results["emmeans"]
    assert [row["system"] for row in emm] == list(want["system"])
    for col in ("emmean", "std_error", "df", "conf_low", "conf_high"):
        _close([row[col] for row in emm], list(want[col]), RTOL, col, library_versions)


@image
@pytest.mark.slow
def test_demo_variance_components_equal_host(demo_in_image, host_results, library_versions):
    vca = demo_in_image[0]["tables"]["variance_components"]
    want = host_results["vca"]
    assert [row["component"] for row in vca] == list(want["component"])
    got = np.array([row["variance"] for row in vca], dtype=float)
    ref = want["variance"].to_numpy(dtype=float)
    # components at the boundary are 0 in both (singular fit): compare those exactly
    assert np.array_equal(got == 0, ref == 0), (got, ref)
    _close(got[ref > 0], ref[ref > 0], RTOL, "variance", library_versions)


# --- the build script's own checks (no podman needed) ------------------------------------------------


def _fake_tools(tmp_path: Path, podman_run_error: str | None) -> str:
    """A PATH with fake podman, runc and debootstrap; the fake podman logs its calls and, when
    ``podman_run_error`` is given, fails `podman run` with that message."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    log = tmp_path / "podman-calls"
    run_branch = (f'echo "{podman_run_error}" >&2; exit 126' if podman_run_error else "exit 0")
    (fake / "podman").write_text(
        "#!/bin/bash\n"
        f'echo "$@" >> "{log}"\n'
        'for a in "$@"; do case "$a" in\n'
        '  inspect) exit 1 ;;\n'
        '  import) exit 0 ;;\n'
        f'  run) {run_branch} ;;\n'
        '  build) echo "unexpected build" >&2; exit 3 ;;\n'
        "esac; done\n")
    (fake / "debootstrap").write_text('#!/bin/bash\nmkdir -p "$3/etc/apt/sources.list.d"\n')
    (fake / "runc").write_text("#!/bin/sh\nexit 0\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    return f"{fake}:/usr/bin:/bin"


@pytest.mark.skipif(os.geteuid() != 0, reason="the build script needs root (debootstrap)")
def test_build_script_fails_with_the_reason_when_no_container_can_start(tmp_path):
    path = _fake_tools(tmp_path, podman_run_error="Error: runc: create failed: cgroups: cannot enter cgroupv2")
    out = subprocess.run(["bash", str(BUILD), "--tag", "x"], capture_output=True, text=True, timeout=120,
                         env=_env(PATH=path, MIXEDEVAL_IMAGE_CACHE=str(tmp_path / "cache")))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "the container runtime cannot start a container here" in out.stderr
    assert "cannot enter cgroupv2" in out.stderr
    calls = (tmp_path / "podman-calls").read_text()
    assert "import --change LABEL org.mixedeval.rootfs=" in calls  # the debootstrapped rootfs, imported
    assert "build" not in calls.split()


def test_build_script_names_missing_tools(tmp_path):
    fake = tmp_path / "empty"
    fake.mkdir()
    for tool in ("bash", "sed", "dirname", "cat", "date", "id"):
        (fake / tool).symlink_to(shutil.which(tool))
    out = subprocess.run([shutil.which("bash"), str(BUILD)], capture_output=True, text=True,
                         env=_env(PATH=str(fake)))
    assert out.returncode == 1
    if not any(Path(d, t).exists() for d in ("/usr/sbin", "/sbin") for t in IMAGE_DEBS):
        assert "not installed: podman runc debootstrap" in out.stderr
    else:  # the script also looks in /usr/sbin (runc, debootstrap live there)
        assert "not installed: podman" in out.stderr
    assert "bash scripts/setup.sh --with-image-tools" in out.stderr


def test_image_tools_by_default_and_a_flag_to_leave_them_out():
    """The README's test command (`bash scripts/setup.sh && .venv/bin/python -m pytest`) runs the image
    test, so the default set-up installs its tools; a library-only user opts out."""
    base = subprocess.run(["bash", str(SETUP), "--list-apt-packages", "--no-image-tools"], capture_output=True,
                          text=True, env=_env()).stdout.split()
    assert not set(IMAGE_DEBS) & set(base)
    out = subprocess.run(["bash", str(SETUP), "--list-apt-packages"], capture_output=True, text=True,
                         env=_env(MIXEDEVAL_SETUP_IMAGE_TOOLS="0"))
    assert out.stdout.split() == base
    for args, env in (([], {}), (["--with-image-tools"], {}), ([], {"MIXEDEVAL_SETUP_IMAGE_TOOLS": "1"})):
        out = subprocess.run(["bash", str(SETUP), "--list-apt-packages", *args], capture_output=True,
                             text=True, env=_env(**env))
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == base + IMAGE_DEBS


def test_ci_run_installs_the_image_tools():
    text = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/setup.sh --with-image-tools" in text


def test_image_marker_is_registered_and_not_deselected():
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("image:") for m in conf["markers"])
    assert "image" not in conf.get("addopts", "")


def _throwaway_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository copy with setup.sh and a fake venv whose python logs pip calls; everything from
    Debian is reported present and apt-get fails (nothing can be installed)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts")
    shutil.copy(ROOT / "scripts" / "r-packages.txt", repo / "scripts")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    pip_log = tmp_path / "pip-calls"
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = pip ]; then echo "$@" >> "{pip_log}"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    (bin_dir / "mixedeval").write_text("#!/bin/sh\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "dpkg-query").write_text('#!/bin/bash\nfor p in "${@:3}"; do printf "%s\\tii \\t1.0\\n" "$p"; done\n')
    (fake / "apt-get").write_text("#!/bin/sh\nexit 99\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    return repo, fake


@pytest.mark.parametrize("how", ["option", "option=", "env"])
def test_setup_installs_from_the_wheelhouse_only(tmp_path, how):
    repo, fake = _throwaway_repo(tmp_path)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "x-1.0-py3-none-any.whl").write_bytes(b"")
    os_release = tmp_path / "os-release"
    os_release.write_text("ID=debian\nVERSION_CODENAME=bookworm\n")
    args = {"option": ["--wheelhouse", str(wheels)], "option=": [f"--wheelhouse={wheels}"], "env": []}[how]
    env = _env(PATH=f"{fake}:{os.environ['PATH']}", MIXEDEVAL_SETUP_OS_RELEASE=str(os_release),
               **({"MIXEDEVAL_WHEELHOUSE": str(wheels)} if how == "env" else {}))
    out = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    call = (tmp_path / "pip-calls").read_text()
    assert f"--no-index --find-links {wheels} -e .[test]" in call


def test_setup_refuses_an_empty_or_missing_wheelhouse(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for where, msg in ((empty, "no wheels in"), (tmp_path / "nope", "no such directory")):
        out = subprocess.run(["bash", str(SETUP), "--list-apt-packages", "--wheelhouse", str(where)],
                             capture_output=True, text=True, env=_env())
        assert out.returncode == 1 and msg in out.stderr, out.stderr
    out = subprocess.run(["bash", str(SETUP), "--wheelhouse"], capture_output=True, text=True, env=_env())
    assert out.returncode == 2 and "--wheelhouse needs a directory" in out.stderr


def test_new_shell_scripts_pass_shellcheck():
    exe = Path(sys.executable).parent / "shellcheck"
    found = str(exe) if exe.exists() else shutil.which("shellcheck")
    assert found, "shellcheck is not installed: it comes with the test extra"
    out = subprocess.run([found, str(BUILD), str(MAKE_WHEELHOUSE)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# --- two runs on one machine (issue 33) ---------------------------------------------------------------


def _slow_debootstrap_tools(tmp_path: Path, fake_flock: bool) -> tuple[str, Path]:
    """Fake tools for two concurrent builds: a debootstrap that takes a second, logs each call
    (start, target) and notes an overlap when another call is running at the same time (a mkdir
    lock of its own); podman fails `podman run` so each build stops after the base image.
    ``fake_flock``: a `flock` that always succeeds (a filesystem without locks)."""
    path = _fake_tools(tmp_path, podman_run_error="Error: no container here (test)")
    fake = Path(path.split(":", 1)[0])
    calls, busy = tmp_path / "debootstrap-calls", tmp_path / "debootstrap-busy"
    (fake / "debootstrap").write_text(
        "#!/bin/bash\n"
        f'echo "start $3" >> "{calls}"\n'
        f'mkdir "{busy}" 2>/dev/null || echo "overlap $3" >> "{calls}"\n'
        'mkdir -p "$3/etc/apt/sources.list.d"\n'
        'for i in 1 2 3 4 5; do echo "$3 $i" >> "$3/written-by"; sleep 0.2; done\n'
        f'rmdir "{busy}" 2>/dev/null || true\n')
    if fake_flock:
        (fake / "flock").write_text("#!/bin/sh\nexit 0\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    return path, calls


def _two_builds(tmp_path: Path, path: str, cache: Path) -> list[subprocess.CompletedProcess]:
    env = _env(PATH=path, MIXEDEVAL_IMAGE_CACHE=str(cache))
    procs = [subprocess.Popen(["bash", str(BUILD), "--tag", f"x{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for i in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        outs.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return outs


def _tarball_members(cache: Path) -> tuple[list[Path], list[str]]:
    import tarfile

    tars = sorted(cache.glob("rootfs-*.tar"))
    with tarfile.open(tars[0]) as tf:
        written = tf.extractfile("./written-by").read().decode().split("\n")
    return tars, [w for w in written if w]


@pytest.mark.skipif(os.geteuid() != 0, reason="the build script needs root (debootstrap)")
def test_two_concurrent_builds_debootstrap_once_and_the_second_reuses_it(tmp_path):
    """Two test runs on one machine start the image build at once: one debootstraps, the other
    waits for the cache lock and reuses the rootfs tarball; nothing is left half-built."""
    path, calls = _slow_debootstrap_tools(tmp_path, fake_flock=False)
    cache = tmp_path / "cache"
    outs = _two_builds(tmp_path, path, cache)
    for out in outs:  # both get as far as this machine allows (no container runtime here: exit 1 with the reason)
        assert out.returncode == 1 and "cannot start a container here" in out.stderr, out.stdout + out.stderr
    log = calls.read_text().splitlines()
    assert [line.split()[0] for line in log] == ["start"], log  # one debootstrap, no overlap
    joined = "".join(o.stdout for o in outs)
    assert "waiting for another build on this machine" in joined and "cached" in joined, joined
    tars, written = _tarball_members(cache)
    assert len(tars) == 1 and len(written) == 5 and len({w.split()[0] for w in written}) == 1
    assert not list(cache.glob("rootfs-*.tmp")) and not list(cache.glob("*.part"))  # no leftovers


@pytest.mark.skipif(os.geteuid() != 0, reason="the build script needs root (debootstrap)")
def test_without_the_lock_two_builds_debootstrap_into_their_own_directories(tmp_path):
    """Where the lock does not hold (a filesystem without flock: a fake flock that always
    succeeds), both runs debootstrap at once, each into a directory of its own, and the tarball
    is one run's whole rootfs, not a mix of two."""
    path, calls = _slow_debootstrap_tools(tmp_path, fake_flock=True)
    cache = tmp_path / "cache"
    outs = _two_builds(tmp_path, path, cache)
    for out in outs:
        assert out.returncode == 1 and "cannot start a container here" in out.stderr, out.stdout + out.stderr
    log = calls.read_text().splitlines()
    targets = [line.split()[1] for line in log if line.startswith("start")]
    assert len(targets) == 2 and targets[0] != targets[1], log  # per-run names
    assert any(line.startswith("overlap") for line in log), log  # they did run at the same time
    tars, written = _tarball_members(cache)
    assert len(tars) == 1 and len(written) == 5 and len({w.split()[0] for w in written}) == 1, written
    assert not list(cache.glob("rootfs-*.tmp")) and not list(cache.glob("*.part"))


@pytest.mark.skipif(os.geteuid() != 0, reason="the build script needs root (debootstrap)")
def test_a_killed_runs_rootfs_directory_is_swept(tmp_path):
    path, _ = _slow_debootstrap_tools(tmp_path, fake_flock=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [cache / f"rootfs-abc.{dead.pid}.Xy12Ab.tmp", cache / "rootfs-abc.tmp"]
    alive = cache / f"rootfs-abc.{os.getpid()}.Zz98Qq.tmp"  # a live run's directory stays
    for d in (*stale, alive):
        d.mkdir()
    out = subprocess.run(["bash", str(BUILD), "--tag", "x"], capture_output=True, text=True, timeout=120,
                         env=_env(PATH=path, MIXEDEVAL_IMAGE_CACHE=str(cache)))
    assert out.returncode == 1, out.stdout + out.stderr
    assert not any(d.exists() for d in stale) and alive.is_dir()
