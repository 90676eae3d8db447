"""Scheduler plugins (entry-point group ``imf.schedulers``): each runs one job per queue slot
and reports its state; ``local``, ``ssh`` and ``slurm`` are built in. The controller that
drives them is imf/sweep/. Nothing here imports the trainer, the model or torch.

The names below are the scheduler's face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``), so ``python -m imf.scheduler.wrapper`` starts with nothing else imported.
"""
from __future__ import annotations

import importlib
from typing import Any

_FACE = {"GROUP": "base", "HANDLE_FIELDS": "base", "Handle": "base", "JobRequest": "base", "JobStatus": "base",
         "Scheduler": "base", "scheduler_for": "base", "scheme_of": "base", "new_token": "claim",
         "device_of": "gpu_probe", "memory_text": "gpu_probe", "what_was_found": "gpu_probe",
         "THREAD_VARS": "wrapped"}
__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
