"""The sweep engine: plan a grid onto queues, run trials as processes, watch, recover, report.

Scheduler plugins (group ``imf.schedulers``) run one job per queue slot; ``local`` and ``ssh``
are built in. Nothing here imports the trainer, the model or torch: a trial is a process.
"""
