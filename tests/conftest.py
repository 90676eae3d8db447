"""Shared test setup: one thread per process (two cores are shared by the whole suite), and
the test tiers: a test that starts a process must be marked ``slow`` (or ``gpu``), so that
``python -m pytest -m "not slow"`` stays the fast, in-process unit tier."""
import multiprocessing.process
import os
import subprocess

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("SWANLAB_MODE", "offline")

QUICK_COMMANDS = {"git"}  # imf/version.py's commit stamp: milliseconds, not a workload


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread in the test process too (torch may have been imported before the
    environment above took effect): two cores are shared by the whole suite."""
    import sys
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


@pytest.fixture(scope="session")
def demo_cache(tmp_path_factory) -> str:
    """An IMF cache folder holding one small scripted data set (4 episodes, seed 0), made once
    per test session; pass it as ``data.cache_dir`` with ``data.demo_episodes=4``."""
    from imf.pusht.expert import ensure_demo_dataset
    cache = tmp_path_factory.mktemp("imf-cache")
    ensure_demo_dataset(4, seed=0, cache_dir=str(cache))
    return str(cache)


@pytest.fixture(autouse=True)
def _unit_tier_starts_no_process(request, monkeypatch):
    if any(request.node.get_closest_marker(m) for m in ("slow", "gpu", "slurm")):
        return
    real_init = subprocess.Popen.__init__

    def refuse(self, args, *rest, **kwargs):
        program = os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args).split()[0])
        if program not in QUICK_COMMANDS:
            raise AssertionError(f"{request.node.nodeid} starts a process ({program}): mark it "
                                 "@pytest.mark.slow (README, 'Run the tests')")
        real_init(self, args, *rest, **kwargs)
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)

    def refuse_child(self):
        raise AssertionError(f"{request.node.nodeid} starts a child process: mark it @pytest.mark.slow")
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse_child)


def pytest_terminal_summary(terminalreporter):
    """Say at the end, in one line, when the SSH queue tests were skipped (no sshd) and why:
    a plain `pytest -q` would otherwise pass without them unnoticed."""
    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if "no sshd" in reason:
            reasons.append(reason.removeprefix("Skipped: "))
    if reasons:
        terminalreporter.write_line(f"{len(reasons)} SSH queue tests skipped: {reasons[0]}; "
                                    "see README.md, 'Run the tests'")


# Nothing a test runs may write into the folder the suite was started from (the repository root
# in CI): every command writes into the folder it names. New entries there fail the run.
_CWD_BEFORE: set[str] = set()
_CWD_IGNORED = {".pytest_cache", ".benchmarks", "__pycache__", ".coverage"}  # tools' own caches


def pytest_sessionstart(session):
    _CWD_BEFORE.update(os.listdir(os.getcwd()))


def pytest_sessionfinish(session, exitstatus):
    named = {os.path.basename(os.environ.get("IMF_CACHE", "").rstrip("/"))}  # the cache the run was told to use
    new = sorted(set(os.listdir(os.getcwd())) - _CWD_BEFORE - _CWD_IGNORED - named)
    if new and not hasattr(session.config, "workerinput"):
        print(f"\nimf tests: the suite wrote {', '.join(new)} into the folder it ran from "
              f"({os.getcwd()}); a command must write only into the folder it names")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# Modules that take a minute or more of wall time (a Slurm cluster's time limits, a scripted
# session, a toy model trained to its modes, real loops): started first under pytest-xdist, so
# the workers end together instead of one finishing them alone.
LONG_MODULES = ("test_scheduler_slurm.py", "test_seed_session.py", "test_objectives_learnability.py",
                "test_loop_real.py", "test_report_axes.py", "test_curricula.py", "test_drills_once.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in LONG_MODULES)  # stable: file order otherwise
