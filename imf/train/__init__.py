"""One trial: data, policy, the training loop, rollouts, checkpoints, logs and stopping.

The names below are the trainer's face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``), so a part that names one imports torch only when it asks for it.
"""
from __future__ import annotations

from imf.faces import lazy_names

# name -> "module" or "module:name in it" (where the module's own name would be ambiguous here)
_FACE = {"ENSEMBLE_CHECKPOINT": "checkpoint:ENSEMBLE", "load_checkpoint": "checkpoint",
         "save_checkpoint": "checkpoint", "weights_to_save": "checkpoint", "dry_run_text": "dry_run",
         "step_seconds": "dry_run", "TorchPolicyAdapter": "evaluate", "best_checkpoint": "evaluate",
         "check_options": "evaluate", "evaluate_checkpoint": "evaluate", "holdout_look": "evaluate",
         "policy_from_checkpoint": "evaluate", "run_final_eval": "evaluate", "pick_device": "parts",
         "check_shapes": "plugin_shapes", "evaluate_program": "program_eval:evaluate",
         "program_line": "program_eval:line", "program_run_of": "program_eval", "run_config": "program_eval",
         "identity_of": "recording", "TrialRequest": "trainers", "TrialOptions": "trial", "run_trial": "trial",
         # the pieces of one trial, for the speed benchmarks (benchmarks/speed/trial_speed.py,
         # gpu_check.py) that time an epoch or a step without starting a trial
         "TrainClock": "budget", "build_datasets": "data", "loader_workers": "data", "make_loader": "data",
         "score": "evaluate", "test_seeds": "evaluate", "autocast_for": "parts", "build_parts": "parts",
         "use_bf16": "parts", "TrainState": "state", "to_device": "step", "train_epoch": "trial"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
