"""Scheduler plugins (entry-point group ``imf.schedulers``): each runs one job per queue slot
and reports its state; ``local``, ``ssh`` and ``slurm`` are built in. The controller that
drives them is imf/sweep/. Nothing here imports the trainer, the model or torch.
"""
