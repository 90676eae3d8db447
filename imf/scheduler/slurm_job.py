"""What a Slurm job of a sweep runs on its node: the trial's command in its run folder.

submitit pickles a ``TrialCommand`` and calls it inside the job. It writes the same files
as the shell queues' wrapper (``stdout.log``, ``exit_code`` as "CODE TOKEN"), so the
controller reads a Slurm trial's progress and end from its run folder like any other.
A retry after a time limit or a preemption runs the resume command when the folder holds
a checkpoint to resume from; a requeued job (SLURM_RESTART_COUNT > 0) does the same. When
Slurm ends the job (SIGTERM) no exit file is written: Slurm's job state tells what happened.
"""
from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LATEST = Path("checkpoints") / "latest.pt"


def write_exit_code(run_dir: Path, code: int, token: str) -> None:
    tmp = run_dir / "exit_code.tmp"
    tmp.write_text(f"{code} {token}\n")
    os.replace(tmp, run_dir / "exit_code")


@dataclass
class TrialCommand:
    run_dir: str
    argv: list[str]
    token: str
    resume_argv: list[str]  # the same trial continued from its latest checkpoint
    resume: bool = False  # the previous attempt ran out of time or was preempted
    env: dict[str, str] = field(default_factory=dict)

    def chosen_argv(self, say) -> list[str]:
        restarted = int(os.environ.get("SLURM_RESTART_COUNT") or 0) > 0
        if not (self.resume or restarted):
            return self.argv
        why = "Slurm requeued this job" if restarted else "Slurm stopped the previous attempt"
        if (Path(self.run_dir) / LATEST).is_file():
            say(f"imf: {why}; resuming from {LATEST}")
            return self.resume_argv
        say(f"imf: {why}, but there is no {LATEST} yet; starting over")
        return self.argv

    def __call__(self) -> int:
        # The sweep resumes trials itself: submitit's requeue-on-signal must not end this job.
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        # SIGTERM here means Slurm ends the job (scancel, time limit, preemption, requeue): its
        # state says so, and an exit file would outlive a requeue of this very attempt.
        ended_by_slurm: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, frame: ended_by_slurm.append(signum))
        run_dir = Path(self.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "stdout.log", "ab") as out:
            def say(line: str) -> None:
                out.write(line.encode() + b"\n")
                out.flush()
            argv = self.chosen_argv(say)
            try:
                proc = subprocess.Popen(argv, cwd=run_dir, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env={**os.environ, **self.env})
            except OSError as exc:
                say(f"imf: cannot run {argv[0]}: {exc}")
                write_exit_code(run_dir, 127, self.token)
                return 127
            code = proc.wait()
        if not ended_by_slurm:
            write_exit_code(run_dir, code, self.token)
        return code
