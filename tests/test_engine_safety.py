"""Process-level safety of the embedded R session (issue 11): R's C stack check is on, so deep
recursion is a clean :class:`mixedeval.RError` instead of SIGSEGV, from the main thread and from
worker threads; Ctrl-C (SIGINT) interrupts an R computation within seconds, raises
KeyboardInterrupt, leaves the session usable, and makes the CLI exit 130.

Everything that could crash or signal runs in a child process, so that a segfault or a stray
KeyboardInterrupt fails one test instead of killing pytest.
"""
from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pandas as pd

import mixedeval as me
from mixedeval.engine import session

PY = [sys.executable, "-c"]
STACK_SHARE = 0.95  # R's own headroom, also used by the engine


def _run(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*PY, textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout)


# -------------------------------------------------------------------------------- C stack
def test_main_thread_has_a_c_stack_limit():
    info = session.call_value("me_test_cstack")
    soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    expected = 8 * 1024 * 1024 if soft == resource.RLIM_INFINITY else soft
    assert int(info["size"]) == int(STACK_SHARE * expected)  # what plain R reports (Cstack_info)
    assert 0 < int(info["current"]) < int(info["size"])
    assert int(info["direction"]) == 1


def test_deep_recursion_is_a_clean_error_and_the_session_survives():
    res = _run("""
        import mixedeval as me
        from mixedeval.engine import session
        for fn, kw in [("me_test_recurse", {"n": 100000}), ("me_test_wide_formula", {"n": 1000}),
                       ("me_test_wide_formula", {"n": 5000})]:
            try:
                session.call_value(fn, **kw)
                print("NO ERROR", fn, kw)
            except me.RError as exc:
                print("RERROR", exc.r_message.splitlines()[0])
            print("NEXT", session.call_value("me_test_recurse", n=20))
        # a 5000-term formula fitted by lm (no lme4 recursion) still works
        print("LM", session.call_value("me_test_wide_formula", n=5000, mixed=False))
        df = me.datasets.load("kreutzer_ter")
        print("RECOVERED", me.lmm("ter ~ system + (1|sentence_id)", df).nobs)
    """)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])  # -11 was SIGSEGV
    lines = res.stdout.splitlines()
    errors = [ln for ln in lines if ln.startswith("RERROR")]
    assert len(errors) == 3, res.stdout
    assert all("C stack usage" in ln or "nested too deeply" in ln for ln in errors), errors
    assert any("C stack usage" in ln and "too close to the limit" in ln for ln in errors)
    assert [ln for ln in lines if ln.startswith("NEXT")] == ["NEXT 0.0"] * 3
    assert "LM 5001" in lines
    assert lines[-1] == "RECOVERED 7287"


def test_threads_run_with_their_own_stack():
    """A worker thread's stack lies elsewhere: R measures it against that thread's own bounds
    (no spurious 'too close to the limit' on a normal call, a clean error on a deep one, even
    with a small thread stack), and the main thread's values are back afterwards."""
    res = _run("""
        import threading
        from concurrent.futures import ThreadPoolExecutor
        import mixedeval as me
        from mixedeval.engine import session
        import rpy2.robjects as ro

        def work(fn, **kw):
            try:
                return repr(session.call_value(fn, **kw))
            except me.RError as exc:
                return "RERROR " + exc.r_message.splitlines()[0]

        with ThreadPoolExecutor(max_workers=3) as pool:  # R is started from a worker thread
            print("POOL", "|".join(pool.map(lambda n: work("me_test_recurse", n=n), [10, 100000, 30, 200])))
        work("me_test_wide_formula", n=5)  # load lme4 (and grid) before the small-stack thread
        for size in (512 * 1024, 64 * 1024 * 1024):
            threading.stack_size(size)
            out = []
            t = threading.Thread(target=lambda: out.append(
                (work("me_test_recurse", n=100000), work("me_test_wide_formula", n=1000),
                 session.call_value("me_test_cstack"), work("me_test_recurse", n=10))))
            t.start(); t.join()
            deep, wide, info, small = out[0]
            print("THREAD", size, deep, "|", wide, "|", small, int(info["size"]), int(info["current"]))
        print("MAIN", ro.r("f <- function(k) if (k > 0) f(k - 1) else 0; f(50)")[0],
              int(ro.r("Cstack_info()")[0]))
    """)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    lines = res.stdout.splitlines()
    pool = next(ln for ln in lines if ln.startswith("POOL"))[5:].split("|")
    assert pool[0] == pool[2] == pool[3] == "0.0" and pool[1].startswith("RERROR"), pool
    small, big = [ln for ln in lines if ln.startswith("THREAD")]
    for line, size in ((small, 512 * 1024), (big, 64 * 1024 * 1024)):
        parts = line.split("|")
        assert "RERROR" in parts[0] and ("C stack" in parts[0] or "nested too deeply" in parts[0]), line
        assert parts[2].split()[0] == "0.0", line
        limit, current = map(int, parts[2].split()[1:])
        assert 0.9 * STACK_SHARE * size <= limit <= STACK_SHARE * size, line
        assert 0 < current < limit, line
    assert "C stack usage" in small.split("|")[1]  # 1000 lme4 terms on a 512 KiB stack
    soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    main = next(ln for ln in lines if ln.startswith("MAIN")).split()
    assert main[1] == "0.0"
    assert int(main[2]) == int(STACK_SHARE * (8 * 1024 * 1024 if soft == resource.RLIM_INFINITY else soft))


def test_calls_from_threads_still_agree(ter):
    small = ter[ter["sentence_id"].isin(sorted(ter["sentence_id"].unique())[:60])]
    with_threads: list[float] = []

    def work() -> None:
        with_threads.append(me.lmm("ter ~ system + (1|sentence_id)", small).loglik)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(with_threads) == 3
    assert np.allclose(with_threads, me.lmm("ter ~ system + (1|sentence_id)", small).loglik, rtol=1e-10)


# -------------------------------------------------------------------------------- Ctrl-C
def test_sigint_handler_is_restored_after_a_call():
    before = signal.getsignal(signal.SIGINT)
    session.call_value("me_test_recurse", n=5)
    assert signal.getsignal(signal.SIGINT) is before
    from rpy2.rinterface_lib import openrlib

    assert openrlib.rlib.R_interrupts_pending == 0


def _interrupt(code: str, marker: str, argv: list[str] | None = None, delay: float = 1.0,
               timeout: float = 240) -> tuple[int, str, str, float]:
    """Start a child, wait for ``marker`` on its stderr (progress) or stdout, send SIGINT after
    ``delay`` seconds; return (exit status, stdout, stderr, seconds from SIGINT to exit)."""
    cmd = argv if argv is not None else [*PY, textwrap.dedent(code)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        stream = proc.stderr if argv is not None else proc.stdout
        seen = []
        for line in stream:
            seen.append(line)
            if marker in line:
                break
        else:
            raise AssertionError(f"child ended before {marker!r}: {''.join(seen)}")
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate()
        elapsed = time.monotonic() - sent  # interruption plus whatever the child does after it
    finally:
        watchdog.cancel()
    if argv is None:
        out = "".join(seen) + out
    else:
        err = "".join(seen) + err
    return proc.returncode, out, err, elapsed


CHILD_PRELUDE = """
    import time
    import mixedeval as me
    from mixedeval.engine import session
    session.call_value("me_versions", packages=["lme4"])  # R started and the library sourced
"""


def test_ctrl_c_interrupts_an_r_loop_and_the_session_survives():
    code = CHILD_PRELUDE + """
    print("START", flush=True)
    t = time.monotonic()
    try:
        print("DONE", session.call_value("me_test_busy", seconds=60), flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", round(time.monotonic() - t, 2), flush=True)
    print("RECOVERED", session.call_value("me_test_recurse", n=10), flush=True)
    df = me.datasets.load("kreutzer_ter")
    print("RECOVERED", me.lmm("ter ~ system + (1|sentence_id)", df).nobs, flush=True)
    """
    code_, out, err, elapsed = _interrupt(code, "START")
    assert code_ == 0, (code_, err[-2000:])
    lines = out.splitlines()
    assert any(ln.startswith("INTERRUPTED") for ln in lines), out
    assert not any(ln.startswith("DONE") for ln in lines), out
    assert float(next(ln for ln in lines if ln.startswith("INTERRUPTED")).split()[1]) < 1.0 + 3.0
    assert lines[-2:] == ["RECOVERED 0.0", "RECOVERED 7287"], out
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert elapsed < 60


def _crossed_table(path=None, n: int = 20_000) -> pd.DataFrame:
    """A crossed design whose five-component lmer fit takes several seconds."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"item": rng.integers(0, 2000, n).astype(str), "sys": rng.integers(0, 8, n).astype(str),
                       "seed": rng.integers(0, 50, n).astype(str), "lang": rng.integers(0, 30, n).astype(str)})
    df["y"] = rng.normal(size=n) + df["item"].astype(int) % 7 * 0.1
    if path is not None:
        df.to_csv(path, index=False)
    return df


SLOW_FORMULA = "y ~ sys + (1|item) + (1|seed) + (1|lang) + (1|sys:lang)"


def test_ctrl_c_interrupts_a_real_fit(tmp_path):
    _crossed_table(tmp_path / "crossed.csv")
    code = CHILD_PRELUDE + f"""
    import pandas as pd
    df = pd.read_csv({str(tmp_path / 'crossed.csv')!r}, dtype=str).astype({{"y": float}})
    print("START", flush=True)
    t = time.monotonic()
    try:
        print("DONE", me.lmm({SLOW_FORMULA!r}, df).loglik, flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", round(time.monotonic() - t, 2), flush=True)
    small = df.iloc[:3000]
    fit = me.lmm("y ~ sys + (1|item)", small)
    print("RECOVERED", fit.nobs, round(fit.loglik, 6), flush=True)
    """
    code_, out, err, _ = _interrupt(code, "START")
    assert code_ == 0, (code_, err[-2000:])
    lines = out.splitlines()
    assert not any(ln.startswith("DONE") for ln in lines), "the fit ended before SIGINT; make it slower"
    took = float(next(ln for ln in lines if ln.startswith("INTERRUPTED")).split()[1])
    assert took < 1.0 + 3.0, out  # SIGINT came after ~1 s; R stops within seconds
    # the session answers the next fit correctly (equal to a fresh in-process fit)
    df = _crossed_table()
    expected = me.lmm("y ~ sys + (1|item)", df.iloc[:3000])
    rec = lines[-1].split()
    assert rec[:2] == ["RECOVERED", "3000"] and abs(float(rec[2]) - expected.loglik) < 1e-4, out
    assert "Exception ignored" not in err, err


def test_cli_exits_130_on_ctrl_c(tmp_path):
    _crossed_table(tmp_path / "crossed.csv")
    argv = [sys.executable, "-m", "mixedeval.cli", "fit", str(tmp_path / "crossed.csv"), "--formula", SLOW_FORMULA,
            "--json"]
    code_, out, err, elapsed = _interrupt("", "fitting", argv=argv)
    assert code_ == 130, (code_, err[-2000:])
    assert err.splitlines()[-1] == "mixedeval: interrupted"
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert json.loads(out) == {"error": "interrupted", "kind": "KeyboardInterrupt"}
    assert elapsed < 4.0
