"""``imf ensemble SOURCE --top K --mode weights|actions``: a top-K ensemble, scored and recorded.

- members.py: the K best checkpoints of a run (its top-k files) or of a sweep (its runs' best.pt)
- build.py: the weight soup (one model) or the action ensemble (K models, chunks averaged)
- score.py: the selection-seed score through ``imf eval``'s path, and the chunk latency
- record.py: ``<id>.json`` beside the checkpoint and the scoreboard's ensemble entry

The checkpoint is complete before it is renamed into place, and nothing is written unless the
members load, fit together and the selection-seed evaluation ran.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from imf.atomic import atomic_path
from imf.ensemble.build import build_checkpoint
from imf.ensemble.members import MODES, Selection, check_request, select
from imf.ensemble.record import check_scoreboard, record, result_of, write_result
from imf.ensemble.score import chunk_latency, selection_seeds, score_selection
from imf.errors import EnsembleError
from imf.store import params_of
from imf.train import save_checkpoint

# chunk_latency and score_selection: benchmarks/learning/ensemble.py times and scores a single model beside the ensemble
__all__ = ["MODES", "EnsembleResult", "check_request", "make_ensemble", "select", "chunk_latency", "score_selection"]


@dataclass
class EnsembleResult:
    selection: Selection
    checkpoint: Path
    result_file: Path
    result: dict[str, Any]


def _params(state: dict[str, Any]) -> dict[str, Any]:
    """The first member's mask, size and objective (the scoreboard's ``config`` entry)."""
    return params_of(state["config"])


def make_ensemble(source: Path, top: int, mode: str, out: Path | None = None, final_eval: int = 200,
                  device: str = "auto", echo: Callable[[str], None] = print) -> EnsembleResult:
    selection = select(Path(source), top, mode)
    out = Path(out) if out is not None else selection.default_out()
    if out.suffix != ".pt" or out.is_dir():
        raise EnsembleError(f"--out {out}: give a checkpoint file name ending in .pt")
    check_scoreboard(selection)
    echo(f"ensemble {selection.id}: {mode} of the top {top} of {selection.source}: "
         + ", ".join(f"{m.checkpoint.name} ({m.score:.3f})" for m in selection.members))
    state = build_checkpoint(selection, mode)
    selection_seeds(state, final_eval)  # a bad N is refused before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:  # scored before it is renamed into place
        save_checkpoint(tmp, state)
        scored = score_selection(tmp, final_eval, device)
        latency = chunk_latency(tmp, device)
    result = result_of(selection, mode, out, scored, latency)
    result_file = write_result(out, result)
    record(selection, result, _params(state))
    echo(f"ensemble {selection.id}: {scored.text()}")
    echo(f"chunk latency: {latency.text()}")
    echo(f"wrote {out} and {result_file}; recorded in {selection.root / 'scoreboard.json'}")
    return EnsembleResult(selection, out, result_file, result)
