"""A stand-in for Slurm's client commands: sbatch, squeue, sacct, scancel and sinfo answer from a
JSON state file, as submitit's tests mock its subprocess calls, so the Slurm scheduler's parsing,
find, poll and stop run without a cluster.

    python fake_slurm.py COMMAND ARGS...     (tests put one shim per command on PATH)

The state file ($FAKE_SLURM_STATE):
    partitions   names sinfo lists
    jobs         id -> {state, reason, comment, name}: what squeue lists
    accounting   id -> state: what sacct knows of jobs squeue no longer lists
    fail         command -> stderr text: that command exits 1 with it
    cancel_after squeue calls after a scancel before the job leaves RUNNING (default 0)
    calls        every command line, appended
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from pathlib import Path

EMPTY = {"partitions": [], "jobs": {}, "accounting": {}, "fail": {}, "cancel_after": 0,
         "cancelling": {}, "next_id": 1000, "calls": []}


def load(path: Path) -> dict:
    return {**EMPTY, **json.loads(path.read_text())} if path.exists() else dict(EMPTY)


def squeue(state: dict, args: list[str]) -> str:
    for job_id, left in list(state["cancelling"].items()):
        if left <= 0:
            state["jobs"].pop(job_id, None)
            state["accounting"][job_id] = "CANCELLED"
            del state["cancelling"][job_id]
        else:
            state["cancelling"][job_id] = left - 1
    fmt = args[args.index("-o") + 1]
    fields = {"%i": lambda i, j: i, "%T": lambda i, j: j["state"], "%r": lambda i, j: j.get("reason", "None"),
              "%k": lambda i, j: j.get("comment", "")}
    return "".join("|".join(fields[f](i, j) for f in fmt.split("|")) + "\n" for i, j in state["jobs"].items())


def sacct(state: dict, args: list[str]) -> str:
    ids = args[args.index("-j") + 1].split(",")
    return "".join(f"{i}|{state['accounting'][i]}\n" for i in ids if i in state["accounting"])


def scancel(state: dict, args: list[str]) -> str:
    job_id = args[0]
    if job_id not in state["jobs"]:
        raise SystemExit(f"scancel: error: Kill job error on job id {job_id}: Invalid job id specified")
    state["cancelling"][job_id] = state["cancel_after"]
    return ""


def sbatch(state: dict, args: list[str]) -> str:
    script = Path(args[-1]).read_text()
    options = dict(re.findall(r"^#SBATCH --([\w-]+)=(.*)$", script, re.M))
    job_id = str(state["next_id"])
    state["next_id"] += 1
    state["jobs"][job_id] = {"state": "PENDING", "reason": "Priority", "comment": options.get("comment", ""),
                             "name": options.get("job-name", "")}
    return f"Submitted batch job {job_id}\n"


def sinfo(state: dict, args: list[str]) -> str:
    return "".join(f"{p}\n" for p in state["partitions"])


def srun(state: dict, args: list[str]) -> str:
    raise SystemExit("srun: the fake cluster runs no job")  # submitit only looks that it exists


COMMANDS = {"squeue": squeue, "sacct": sacct, "scancel": scancel, "sbatch": sbatch, "sinfo": sinfo,
            "srun": srun}


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    path = Path(os.environ["FAKE_SLURM_STATE"])
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = load(path)
        state["calls"].append([command, *args])
        try:
            if command in state["fail"]:
                raise SystemExit(state["fail"][command])
            out = COMMANDS[command](state, args)
        except SystemExit as exc:
            path.write_text(json.dumps(state))
            sys.stderr.write(f"{exc}\n")
            return 1
        path.write_text(json.dumps(state))
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
