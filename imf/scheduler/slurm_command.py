"""What a Slurm job of a sweep runs on its node: the trial's command in its run folder.

submitit pickles a ``TrialCommand`` and calls it inside the job; it runs the trial through the
job wrapper's ``run_attempt`` (imf/scheduler/wrapper.py), so a Slurm trial's folder holds the same
files as any other and the controller reads its progress and end the same way.
A retry after a time limit or a preemption runs the resume command when the folder holds
a checkpoint to resume from; a requeued job (SLURM_RESTART_COUNT > 0) does the same. When
Slurm ends the job (SIGTERM) no exit file is written: Slurm's job state tells what happened.
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from imf.atomic import atomic_write_json
from imf.scheduler.slurm_status import RESTARTS
from imf.scheduler.wrapper import run_attempt
from imf.store import LATEST, RunLayout, checkpoint_name


@dataclass
class TrialCommand:
    run_dir: str
    argv: list[str]
    token: str
    resume_argv: list[str]  # the same trial continued from its latest checkpoint
    resume: bool = False  # the previous attempt ran out of time or was preempted
    env: dict[str, str] = field(default_factory=dict)

    def chosen_argv(self, say) -> list[str]:
        restarts = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
        restarted = restarts > 0
        if restarted:  # the controller may never have seen the job back in the queue: it reads this
            atomic_write_json(Path(self.run_dir) / RESTARTS, {"token": self.token, "restarts": restarts})
        if not (self.resume or restarted):
            return self.argv
        why = "Slurm requeued this job" if restarted else "Slurm stopped the previous attempt"
        if RunLayout(Path(self.run_dir)).latest.is_file():
            say(f"imf: {why}; resuming from {checkpoint_name(LATEST)}")
            return self.resume_argv
        say(f"imf: {why}, but there is no {checkpoint_name(LATEST)} yet; starting over")
        return self.argv

    def __call__(self) -> int:
        # The sweep resumes trials itself: submitit's requeue-on-signal must not end this job.
        # SIGTERM means Slurm ends the job (scancel, time limit, preemption, requeue): the
        # wrapper then writes no exit file, and Slurm's state says what happened.
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        run_dir = Path(self.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        notes: list[str] = []
        argv = self.chosen_argv(notes.append)
        return run_attempt(run_dir, self.token, argv, self.env, say="\n".join(notes) or None)
