"""Scheduler plugins (entry-point group ``imf.schedulers``): each runs one job per queue slot
and reports its state; ``local``, ``ssh`` and ``slurm`` are built in. The controller that
drives them is imf/sweep/. Nothing here imports the trainer, the model or torch.

The names below are the scheduler's face for other parts; each loads its module on first use
(PEP 562 ``__getattr__``), so ``python -m imf.scheduler.wrapper`` starts with nothing else imported.
"""
from __future__ import annotations

from imf.faces import lazy_names

_FACE = {"GROUP": "base", "HANDLE_FIELDS": "base", "Handle": "base", "JobRequest": "base", "JobStatus": "base",
         "Scheduler": "base", "scheduler_for": "base", "scheme_of": "base", "new_token": "claim",
         "device_of": "gpu_probe", "memory_text": "gpu_probe", "what_was_found": "gpu_probe",
         "THREAD_VARS": "wrapped"}
__all__ = sorted(_FACE)


__getattr__ = lazy_names(__name__, _FACE, globals())
