"""Exactly once, under any timing (issue #49): the controller SIGKILLed at steps of a trial's start
and end, the job wrappers held stopped while the resumed controller looks, then resumed; no trial
runs twice and its records agree (benchmarks/drills/drills_once.py: a round per kill point here, the
benchmark runs hundreds). Also the wrapper's claim, unit by unit."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from imf.scheduler import wrapper
from imf.scheduler.claim import new_token, read_claim, token_time

from _sweep_helpers import SSHD, start_sshd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "drills"))

# the steps where a start or an end is half done, and a resume's own question about a start
WIDEST = ("wrapper-claimed", "wrapper-spawned", "wrapper-pid-written", "start-settled", "ended-saved",
          "recorded")


@pytest.mark.slow  # real controllers and stand-in trials: about half a minute
def test_a_controller_killed_at_each_step_of_a_start_or_an_end_runs_each_trial_once():
    from drills_once import run
    tally = run(rounds=1, seed=1, points=WIDEST)
    assert tally.kills >= len(WIDEST) and tally.failed == 0, tally.problems
    assert tally.good == tally.trials == 4 * len(WIDEST)


@pytest.mark.slow  # imf loop with stand-in trials: about half a minute
def test_a_loop_killed_at_its_own_writes_runs_each_round_once():
    import random
    import tempfile

    from drills_once import Tally, loop_round
    tally, rng = Tally(), random.Random(2)
    for kills in (["round-concluded:1", "hypothesis-logged:1"], ["loop-saved:3", "wrapper-spawned:1"]):
        with tempfile.TemporaryDirectory(prefix="imf-once-") as tmp:
            tally.add(loop_round(Path(tmp), kills, tally, rng), " then ".join(kills))
    assert tally.kills >= 2 and tally.failed == 0 and tally.good == tally.trials == 8, tally.problems


@pytest.mark.slow  # a private sshd and stand-in trials: about half a minute
@pytest.mark.skipif(not os.path.exists(SSHD), reason=f"no sshd at {SSHD} (apt-get install -y openssh-server)")
def test_a_controller_of_ssh_queues_killed_mid_start_or_end_runs_each_remote_trial_once(tmp_path):
    """Over SSH the jobs outlive the controller on the host: a resume re-attaches or credits them."""
    from drills_once import Tally, ssh_queues, sweep_round
    import random
    server, tally, rng = start_sshd(tmp_path / "sshd"), Tally(), random.Random(3)
    try:
        for kills in (["launch-saved:2"], ["ended-saved:1", "start-settled:1"]):
            (tmp_path / kills[0]).mkdir()
            tally.add(sweep_round(tmp_path / kills[0], kills, tally, rng, ssh_queues(server)), kills[0])
    finally:
        server.stop()
    assert tally.kills >= 2 and tally.failed == 0 and tally.good == tally.trials == 8, tally.problems


def test_a_child_whose_claim_is_not_its_own_runs_nothing(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "claim").write_text("new\n")
    code = wrapper.run_attempt(folder, "old", [sys.executable, "-c", "open('ran', 'w')"])
    assert code == 0 and not (folder / "ran").exists() and not (folder / "pid").exists()
    assert wrapper.probe(folder, 0, 10)["pid"] is None  # no waiting on a claim without a pid file


def test_revoke_says_started_or_makes_sure_the_attempt_never_runs(tmp_path):
    folder = tmp_path / "job"
    assert wrapper.revoke(folder, "t1") == "revoked"  # its start had not even made the folder
    assert read_claim(folder).revoked and read_claim(folder).token == "t1"
    assert wrapper.run_attempt(folder, "t1", ["true"]) == 0 and not (folder / "pid").exists()
    assert wrapper.revoke(folder, "t0") == "revoked" and read_claim(folder).token == "t1"  # left as it is
    (folder / "pid").write_text("1 1 t2\n")  # attempt t2's job wrote its pid file
    assert wrapper.revoke(folder, "t2") == "started"


def test_tokens_carry_their_time_and_a_new_one_is_later_than_every_known_one():
    first = new_token()
    ahead = f"{token_time(first) + 10**12:016x}abcdef01"  # a token from a clock 1000 s ahead
    assert token_time(new_token([first, ahead, "legacy"])) > token_time(ahead)
    assert token_time("0123456789abcdef") is None  # an older imf's token: compared for equality only


def _unused_pid() -> int:
    """A pid no process runs under now (the writer of a temp that was killed)."""
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(pid for pid in range(top - 1, 1, -1) if not Path(f"/proc/{pid}").exists())


@pytest.mark.parametrize("command", [pytest.param("start", marks=pytest.mark.slow), "revoke"])
def test_a_claim_half_written_by_a_killed_start_is_cleaned_by_the_next_claim(tmp_path, command):
    """The controller-kills drill found it: a start SIGKILLed while writing the claim left its temp
    (``.claim.<pid>@<host>.<token>.tmp``) in the job folder for good. The claim is written only under
    the folder's lock, so the next start or revoke there removes a temp whose writer is gone."""
    import socket
    folder = tmp_path / "job"
    folder.mkdir()
    left = folder / f".claim.{_unused_pid()}@{socket.gethostname()}.0123abcd.tmp"
    left.write_text("t0")
    mine = folder / f".claim.{os.getpid()}@{socket.gethostname()}.89abcdef.tmp"  # a live writer's: kept
    mine.write_text("t1")
    # the pid file is written under the same lock, by a local controller's start (in-process) and by
    # the job: the drill left a killed controller's temp pid file too (1 run in 27)
    left_pid = folder / f".pid.{_unused_pid()}@{socket.gethostname()}.4567cdef.tmp"
    left_pid.write_text("0 0 t0")
    if command == "revoke":
        assert wrapper.revoke(folder, "t2") == "revoked"
    else:
        import io
        code = wrapper.start(folder, new_token(), dict(os.environ), [sys.executable, "-c", "pass"],
                             io.BytesIO(), io.StringIO())
        assert code == 0 and not left_pid.exists()
    assert not left.exists() and mine.exists()
