"""The sweep controller: plan a grid onto queues (plan), run it (engine: the queue loop and its
recovery), keep its state (state: sweep.json; validate), show it (status, live), stop it
(cancel), and end it (finish: stores, report, notify). It starts trials as processes through
the scheduler plugins of imf/scheduler/ and never imports the trainer, the model or torch.
"""
