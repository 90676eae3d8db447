"""A stand-in for `imf trial` with the same arguments: epochs of known length, real files.

    python tests/fake_trial.py [OPTIONS --] CONFIG --id ID --out DIR --seed S --store none
                               --epochs N key=value...

Options (before the trial's own arguments, so a sweep's IMF_TRIAL_COMMAND prefix carries them):
  --epoch-s F         seconds per epoch (default 0.05)
  --cost-scaled       multiply the epoch time by n_layer * n_emb^2 / 1e6 + 0.5 (the planner's model)
  --fail-on S         exit 3 while the trial id contains S and fewer than --fail-times attempts ran
  --fail-times N      how many attempts of --fail-on / --hang-on / --oom-on trials misbehave (default 1)
  --oom-on S          end like imf trial out of GPU memory (exit 71, summary.json "failed" with the
                      named reason) while the trial id contains S, same attempt rule
  --hang-on S         stop writing anything (sleep) after the first epoch, same attempt rule
  --ledger FILE       append "ID PID" to FILE when the trial completes (drills count completions)
  --disk-full-while F after its first epoch, fail like imf trial on a full disk (exit 75) while F exists
  --extras            also leave what a real trial leaves beside its results: swanlog/run-fake/,
                      a top-k checkpoint, final_eval.json and holdout.json
  --plant FILE        planted rollouts: FILE is JSON {trial id: {epoch counted from 1: [per-episode
                      scores]}}; a planted trial rolls out at exactly those epochs, with
                      test_mean_score their mean and test_per_seed the scores (seeds 100000..)
It writes fake.pid, config.yaml, one logs.json.txt line per epoch (test_mean_score every 2 and
at the end), checkpoints/latest.pt ("epoch N") after every epoch, summary.json in the
documented format and checkpoints/best.pt; exits 0. With ``--resume --out DIR`` (no config),
like ``imf trial --resume``, it continues DIR's run after the epoch in its latest.pt.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.Namespace]:
    fake = argparse.ArgumentParser(allow_abbrev=False)
    fake.add_argument("--epoch-s", type=float, default=0.05)
    fake.add_argument("--cost-scaled", action="store_true")
    fake.add_argument("--fail-on", default=None)
    fake.add_argument("--hang-on", default=None)
    fake.add_argument("--oom-on", default=None)
    fake.add_argument("--fail-times", type=int, default=1)
    fake.add_argument("--ledger", default=None)
    fake.add_argument("--disk-full-while", default=None)
    fake.add_argument("--plant", default=None)
    fake.add_argument("--extras", action="store_true")
    fake.add_argument("--gate", default=None, help="hold before the first epoch until this file exists")
    opts, rest = fake.parse_known_args(argv)
    trial = argparse.ArgumentParser(allow_abbrev=False)
    trial.add_argument("config", nargs="?")
    trial.add_argument("--resume", action="store_true")
    trial.add_argument("--id", required=True)
    trial.add_argument("--out", required=True)
    trial.add_argument("--seed", type=int, default=42)
    trial.add_argument("--store", action="append")
    trial.add_argument("--epochs", type=int, default=4)
    trial.add_argument("overrides", nargs="*")
    args = trial.parse_intermixed_args([a for a in rest if a != "--"])
    if args.resume:  # the run as configured in its folder, like imf trial --resume
        kept = json.loads((Path(args.out) / "config.yaml").read_text())
        args.config, args.overrides = kept["config"], kept["overrides"]
        args.epochs, args.seed = kept["epochs"], kept["seed"]
    return opts, args


def write_json(path: Path, obj: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def params_of(args: argparse.Namespace) -> dict:
    params = {"mask": "causal", "n_emb": 256, "n_layer": 8, "n_head": 4, "objective": "imf"}
    for item in args.overrides:
        key, _, value = item.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in ("n_emb", "n_layer", "n_head"):
            params[name] = int(value)
        elif name == "mask":
            params["mask"] = value
    return params


def main(argv: list[str]) -> int:
    opts, args = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    attempt = 1 + len(list((out / "attempts").glob("*")))
    (out / "fake.pid").write_text(str(os.getpid()))
    (out / "config.yaml").write_text(json.dumps({"config": args.config, "overrides": args.overrides,
                                                 "epochs": args.epochs, "seed": args.seed}))
    first = 0
    if args.resume:
        first = int((out / "checkpoints" / "latest.pt").read_text().split()[1]) + 1
        print(f"fake trial {args.id}: resumed at epoch {first}", flush=True)
    params = params_of(args)
    epoch_s = opts.epoch_s
    if opts.cost_scaled:
        epoch_s *= params["n_layer"] * params["n_emb"] ** 2 / 1e6 + 0.5
    misbehave = attempt <= opts.fail_times
    if opts.fail_on and opts.fail_on in args.id and misbehave:
        print(f"fake trial {args.id}: failing on purpose (attempt {attempt})", flush=True)
        return 3
    started = time.time()
    if opts.oom_on and opts.oom_on in args.id and misbehave:
        return out_of_memory(args, out, started)
    base = 0.5 + params["n_emb"] / 2000 + params["n_layer"] / 100 + (args.seed % 7) / 1000
    best = last = None
    planted = json.loads(Path(opts.plant).read_text()).get(args.id) if opts.plant else None
    waited = 0
    while opts.gate and not os.path.exists(opts.gate):  # held (a live job) until the test opens it
        time.sleep(0.2)
        waited += 1
        if waited % 10 == 0:
            print(f"fake trial {args.id}: waiting for {opts.gate}", flush=True)  # output grows: not a stall
    with open(out / "logs.json.txt", "a") as log:
        for epoch in range(first, args.epochs):
            time.sleep(epoch_s)
            row = {"epoch": epoch, "global_step": (epoch + 1) * 10, "train_loss": 1.0 / (epoch + 1),
                   "val_loss": 1.1 / (epoch + 1), "val_mse": round(0.5 / (epoch + 1), 4), "lr": 1e-4}
            if planted is not None:
                episodes = planted.get(str(epoch + 1))
                if episodes:
                    last = sum(episodes) / len(episodes)
                    row["test_mean_score"] = last
                    row["test_per_seed"] = {str(100000 + i): v for i, v in enumerate(episodes)}
                    best = last if best is None else max(best, last)
            elif epoch % 2 == 1 or epoch == args.epochs - 1:
                last = round(min(1.0, base * (1 + epoch) / args.epochs), 4)
                row["test_mean_score"] = last
                best = last if best is None else max(best, last)
            log.write(json.dumps(row) + "\n")
            log.flush()
            (out / "checkpoints").mkdir(exist_ok=True)
            (out / "checkpoints" / "latest.tmp").write_text(f"epoch {epoch}")
            os.replace(out / "checkpoints" / "latest.tmp", out / "checkpoints" / "latest.pt")
            print(f"epoch {epoch} done", flush=True)
            if opts.disk_full_while and os.path.exists(opts.disk_full_while):
                print(f"imf: error: no space left on device writing {out}/checkpoints/latest.pt "
                      "(0.0 MB free)", file=sys.stderr, flush=True)
                return 75
            if opts.hang_on and opts.hang_on in args.id and misbehave:
                time.sleep(3600)
    (out / "checkpoints").mkdir(exist_ok=True)
    (out / "checkpoints" / "best.pt").write_bytes(b"fake checkpoint " + args.id.encode())
    write_json(out / "summary.json", {
        "id": args.id, "status": "completed", "epochs_done": args.epochs, "num_epochs": args.epochs,
        "global_step": args.epochs * 10, "best_score": best, "best_epoch": args.epochs - 1,
        "last_score": last, "best_success_rate": None, "elapsed_s": round(time.time() - started, 3),
        "warm_started": False, "init_from": None, "overrides": args.overrides, "note": "fake",
        "seed": args.seed, "params": params,
        "checkpoints": {"latest": None, "best": "checkpoints/best.pt", "topk": []},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "code_version": "fake"})
    if opts.extras:
        extras(out, args, best)
    if opts.ledger:
        with open(opts.ledger, "a") as ledger:
            ledger.write(f"{args.id} {os.getpid()}\n")
    return 0


def extras(out: Path, args: argparse.Namespace, best: float | None) -> None:
    """A tracker's folder, a top-k file and the re-scoring files of a real trial (their shapes)."""
    (out / "swanlog" / "run-fake" / "files").mkdir(parents=True, exist_ok=True)
    (out / "swanlog" / "run-fake" / "files" / "config.yaml").write_text(f"trial: {args.id}\n")
    (out / "checkpoints" / f"epoch={args.epochs - 1:04d}-test_mean_score={best or 0:.3f}.pt").write_bytes(b"top-k")
    scores = {"mean": best or 0.0, "per_seed": [best or 0.0, best or 0.0], "episodes": 2,
              "success_rate": 0.5, "checkpoint": "checkpoints/best.pt"}
    write_json(out / "final_eval.json", scores)
    write_json(out / "holdout.json", {"looks": []})


OOM_REASON = ("out of GPU memory at batch 64 (peak 23.5 GiB of 24.0 GiB); instead run training.grad_accum=2 "
              "(micro-batches of 32, the same 64 windows per step), or on a bigger card")


def out_of_memory(args: argparse.Namespace, out: Path, started: float) -> int:
    """What imf trial leaves when its first step does not fit on the GPU."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_json(out / "summary.json", {
        "id": args.id, "status": "failed", "reason": OOM_REASON, "epochs_done": 0,
        "num_epochs": args.epochs, "global_step": 0, "best_score": None, "seed": args.seed,
        "params": params_of(args), "overrides": args.overrides, "note": "fake",
        "checkpoints": {"latest": None, "best": None, "topk": []},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "finished": now})
    print(f"imf: error: {OOM_REASON}", file=sys.stderr, flush=True)
    return 71


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
