"""A researcher's first session with imf, scripted: 12+ trials into one project folder.

Overrides, three seeds, a warm-start chain of three, a trial that diverges, two trials at once,
a loop of two rounds, the best re-scored, an ensemble; then the one scoreboard they all share.
Every command is printed as typed and its output as it came, so docs/loop.md can show a real run.

    python examples/seed_session.py runs/session            # the smoke preset, minutes on a CPU
    python examples/seed_session.py runs/session --tiny     # seconds a trial (what the test runs)
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

TINY = ["training.max_train_steps=2", "training.batch_size=8", "eval.n_test=2", "eval.n_train=0",
        "eval.max_steps=8", "eval.n_workers=1", "data.demo_episodes=4", "logging.swanlab=false"]
EPOCHS = ["training.num_epochs=2", "training.rollout_every=1", "training.checkpoint_every=1"]


def imf(*args: str, check: bool = True, background: bool = False) -> subprocess.Popen | int:
    """Run ``imf ARGS`` as a user would, printing the command and its output."""
    argv = [sys.executable, "-m", "imf", *args]
    print(f"$ imf {shlex.join(args)}", flush=True)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if background:
        return proc
    return finish(proc, check)


def finish(proc: subprocess.Popen, check: bool = True) -> int:
    out, _ = proc.communicate()
    print(out.rstrip(), flush=True)
    print(f"(exit {proc.returncode})\n", flush=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"seed_session: `{shlex.join(proc.args[2:])}` exited {proc.returncode}")
    return proc.returncode


def session(project: Path, settings: list[str]) -> None:
    p = str(project)
    trial = ["trial", "smoke", *settings, *EPOCHS]
    imf(*trial, "--out", f"{p}/base", "--note", "the preset as it is")
    imf(*trial, "training.lr=1e-3", "--out", f"{p}/lr1e-3", "--note", "a higher learning rate")
    for seed in (43, 44):  # with base: three seeds of one cell
        imf(*trial, "--seed", str(seed), "--out", f"{p}/seed{seed}")
    parent = f"{p}/base"
    for link in ("warm1", "warm2", "warm3"):  # a warm-start chain of three
        imf(*trial, "--init-from", f"{parent}/checkpoints/best.pt", "--out", f"{p}/{link}")
        parent = f"{p}/{link}"
    imf(*trial, "training.lr=1e6", "training.divergence_warmup_steps=0", "training.lr_warmup_steps=0",
        "--out", f"{p}/diverged", check=False)  # exits 3: diverged
    both = [imf(*trial, "--seed", str(seed), "training.lr=5e-4", "--out", f"{p}/parallel{seed}",
                background=True) for seed in (42, 43)]
    for proc in both:
        finish(proc)
    imf("loop", p, "--rounds", "2", "--per-round", "1", "--queue", "local:cpu")
    imf("eval", "--best", p, "--n-test", "2")
    imf("ensemble", f"{p}/base", "--top", "2", "--mode", "weights", "--final-eval", "2")
    imf("report", p)
    print((project / "ITERATION_LOG.md").read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="the project folder (new)")
    parser.add_argument("--tiny", action="store_true", help="tiny trials (seconds each)")
    args = parser.parse_args()
    if args.project.exists():
        raise SystemExit(f"seed_session: {args.project} exists; give a new folder")
    session(args.project, TINY if args.tiny else [])


if __name__ == "__main__":
    main()
