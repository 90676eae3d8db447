"""training.grad_accum: K micro-batches per optimizer step give the full batch's gradient.

The objectives draw noise, times and crops per row; a row-keyed stand-in for torch's draws
gives every window the same draws whether it is in the whole batch or in a micro-batch, so the
gradients must agree to float tolerance. The mean-flow objectives give their first
round(equal_time_ratio * n) rows r = t, per micro-batch: they are checked at ratio 0 (every
row through iMF's JVP) and 1 (every row at the boundary), where the split leaves that alone.
"""
from __future__ import annotations

import json

import pytest
import torch
from test_policy_core import batch, make_policy

from imf.config import load_config
from imf.errors import ConfigError
from imf.train.step import accumulate_gradients, micro_batches

CPU = torch.device("cpu")


class RowKeyedDraws:
    """torch.randn / torch.randint whose draws for a batch row depend only on the row's place in
    the whole batch and the order of the draw in one loss (never on the micro-batch)."""

    def __init__(self, seed: int = 5):
        self.seed, self.tables, self.offset, self.size, self.calls = seed, {}, 0, 0, 0
        self.real_randn, self.real_randint = torch.randn, torch.randint

    def _rows(self, key, n: int, make):
        if n % self.size:
            raise AssertionError(f"a draw of {n} rows in a batch of {self.size}: not per row")
        per_row = n // self.size
        self.calls += 1
        full_key = (self.calls, per_row, *key)
        if full_key not in self.tables:
            self.tables[full_key] = make(torch.Generator().manual_seed(self.seed + len(self.tables)), per_row)
        table = self.tables[full_key]
        return table[self.offset * per_row:(self.offset + self.size) * per_row]

    def randn(self, *size, generator=None, device=None, dtype=None, **kw):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
        rest = tuple(shape[1:])
        out = self._rows(("randn", rest), shape[0], lambda g, r: self.real_randn(
            (self.total * r, *rest), generator=g))
        return out.to(device=device or "cpu", dtype=dtype or torch.float32)

    def randint(self, low, high=None, size=None, generator=None, device=None, **kw):
        low, high = (0, low) if high is None else (low, high)
        rest = tuple(size[1:])
        out = self._rows(("randint", low, high, rest), size[0], lambda g, r: self.real_randint(
            low, high, (self.total * r, *rest), generator=g))
        return out.to(device=device or "cpu")

    def keyed(self, compute_loss, total: int, monkeypatch):
        """``compute_loss`` drawing from the tables; the rows it gets follow on from the last call's."""
        self.total = total

        def wrapped(part, generator=None):
            self.size, self.calls = len(part["action"]), 0
            with monkeypatch.context() as m:
                m.setattr(torch, "randn", self.randn)
                m.setattr(torch, "randint", self.randint)
                out = compute_loss(part)
            self.offset = (self.offset + self.size) % total
            return out
        return wrapped


CASES = [("imf", ["objective.options.equal_time_ratio=0.0"]),
         ("imf", ["objective.options.equal_time_ratio=1.0"]),
         ("imf", ["objective.options.equal_time_ratio=0.0", "objective.options.tangent=v_head"]),
         ("meanflow", ["objective.options.equal_time_ratio=0.0"]),
         ("meanflow", ["objective.options.equal_time_ratio=1.0"]),
         ("flow", []), ("ddpm", [])]


@pytest.mark.parametrize("objective, extra", CASES, ids=[f"{o}-{'-'.join(e) or 'default'}" for o, e in CASES])
@pytest.mark.parametrize("n, k", [(8, 2), (10, 4)])  # 10 in 4: the short last batch of an epoch
def test_an_accumulated_step_has_the_full_batch_gradient(objective, extra, n, k, monkeypatch):
    policy = make_policy(f"objective.name={objective}", "policy.p_drop_attn=0.0", "policy.p_drop_emb=0.0", *extra)
    policy.train()
    data = batch(b=n)
    draws = RowKeyedDraws()
    monkeypatch.setattr(policy, "compute_loss", draws.keyed(policy.compute_loss, n, monkeypatch))
    results = {}
    for micro in (1, k):
        policy.zero_grad(set_to_none=True)
        loss, metrics = accumulate_gradients(policy, data, micro, CPU, autocast=False)
        grads = {name: p.grad.clone() for name, p in policy.named_parameters() if p.grad is not None}
        results[micro] = (loss, metrics, grads)
    (loss1, metrics1, full), (loss_k, metrics_k, accumulated) = results[1], results[k]
    assert full.keys() == accumulated.keys() and len(full) > 10
    torch.testing.assert_close(loss_k, loss1, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(metrics_k["mse"], metrics1["mse"], rtol=1e-5, atol=1e-6)
    for name, grad in full.items():
        torch.testing.assert_close(accumulated[name], grad, rtol=1e-4, atol=1e-6, msg=name)
    assert any(g.abs().sum() > 0 for g in full.values())


def test_the_row_keyed_draws_would_catch_a_wrong_split(monkeypatch):
    # the same check fails when the micro-batches' losses are not weighted by their share
    policy = make_policy("objective.name=flow", "policy.p_drop_attn=0.0")
    policy.train()
    data = batch(b=10)
    draws = RowKeyedDraws()
    monkeypatch.setattr(policy, "compute_loss", draws.keyed(policy.compute_loss, 10, monkeypatch))
    policy.zero_grad(set_to_none=True)
    accumulate_gradients(policy, data, 1, CPU, autocast=False)
    full = policy.model.head.weight.grad.clone() if hasattr(policy.model, "head") else \
        next(p.grad.clone() for p in policy.parameters() if p.grad is not None)
    policy.zero_grad(set_to_none=True)
    for part, _ in micro_batches(data, 4):  # unweighted: each part's mean counted whole
        policy.compute_loss(part)[0].backward()
    wrong = policy.model.head.weight.grad if hasattr(policy.model, "head") else \
        next(p.grad for p in policy.parameters() if p.grad is not None)
    assert not torch.allclose(wrong, full, rtol=1e-3)


def test_micro_batches_split_every_tensor_of_a_batch():
    data = batch(b=10)
    parts = micro_batches(data, 4)
    assert [len(p["action"]) for p, _ in parts] == [2, 3, 2, 3]
    assert [share for _, share in parts] == [0.2, 0.3, 0.2, 0.3]
    assert torch.equal(torch.cat([p["obs"]["image"] for p, _ in parts]), data["obs"]["image"])
    assert [len(p["action"]) for p, _ in micro_batches(batch(b=3), 4)] == [1, 1, 1]


def test_grad_accum_is_checked_against_the_batch_size():
    assert load_config("smoke").training.grad_accum == 1
    assert load_config("smoke", ["training.grad_accum=4"]).training.grad_accum == 4
    with pytest.raises(ConfigError, match="training.grad_accum.*must be >= 1"):
        load_config("smoke", ["training.grad_accum=0"])
    with pytest.raises(ConfigError, match="training.grad_accum.*3 must divide training.batch_size=32"):
        load_config("smoke", ["training.grad_accum=3"])


@pytest.mark.slow
def test_a_trial_with_grad_accum_keeps_steps_lr_ema_and_epochs(demo_cache, tmp_path):
    from test_train_trial import run, tiny
    from imf.train.checkpoint import load_checkpoint
    logs, emas = {}, {}
    for k in (1, 2):
        cfg = tiny(demo_cache, "training.num_epochs=2", f"training.grad_accum={k}", "logging.stores=none",
                   "training.rollout_every=2")
        summary = run(cfg, tmp_path / f"k{k}")
        assert summary["status"] == "completed"
        logs[k] = [json.loads(line) for line in (tmp_path / f"k{k}" / "logs.json.txt").read_text().splitlines()]
        emas[k] = load_checkpoint(tmp_path / f"k{k}" / "checkpoints" / "latest.pt")["ema_state"]
    assert [(r["epoch"], r["global_step"], r["lr"]) for r in logs[2]] == \
        [(r["epoch"], r["global_step"], r["lr"]) for r in logs[1]]
    assert emas[2] == emas[1]  # as many EMA updates
    assert all(abs(r["train_loss"]) < 1e3 for r in logs[2])


def test_grad_accum_and_init_partial_are_not_part_of_a_cell(tmp_path):
    from _report_runs import make_run
    from imf.report import build_report
    for seed, extra in ((0, {}), (1, {"grad_accum": 2, "init_partial": True})):
        config = {"policy": {"n_emb": 64, "n_layer": 2}, "training": {"seed": seed, "lr": 0.001, **extra}}
        make_run(tmp_path / "sw", f"sw-causal-e64-l2-s{seed}", [0.5, 0.6], n_emb=64, n_layer=2,
                 config=config)
    cells = build_report([tmp_path / "sw"]).trends.cells
    assert [c.n for c in cells] == [2]  # one cell: accumulation changes memory, not what is learned
