"""The GPU check of a sweep's queues: one probe per host through the job wrapper, a verdict per
GPU slot (its device, or why it is missing), and the free memory an out-of-memory retry needs.

The controller never imports torch: the probe runs in the host's python (gpu_probe.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from imf.errors import QueueError
from imf.scheduler import Scheduler, device_of, memory_text, what_was_found
from imf.sweep.state import QueueState


@dataclass
class GpuVerdict:
    queue: str
    device: dict[str, Any] | None  # the probe's entry for the slot's GPU; None: missing
    text: str  # what the probe found, one line

    @property
    def found(self) -> bool:
        return self.device is not None


def probe_queues(queues: list[QueueState], scheduler: Callable[[str], Scheduler]) -> list[GpuVerdict]:
    """A verdict for every queue that holds one GPU it can be asked about (one probe per host);
    CPU slots and batch-system GPUs (the node is not known before the job runs) have none."""
    answers: dict[Any, dict[str, Any] | QueueError] = {}
    verdicts = []
    for queue in queues:
        sch = scheduler(queue.name)
        key = sch.probe_key()
        if sch.gpu is None or not sch.gpu.isdigit() or key is None:
            continue
        if key not in answers:
            try:
                answers[key] = sch.probe_gpus()
            except QueueError as exc:
                answers[key] = exc
        verdicts.append(_verdict(queue.name, sch, answers[key]))
    return verdicts


def _verdict(name: str, sch: Scheduler, answer: dict[str, Any] | QueueError) -> GpuVerdict:
    index = int(sch.gpu or 0)
    if isinstance(answer, QueueError):
        return GpuVerdict(name, None, f"cannot probe GPU {index} on {sch.host_label()}: {answer}")
    device = device_of(answer, index)
    if device is None:
        return GpuVerdict(name, None, f"no CUDA device {index} on {sch.host_label()}: "
                                      f"{what_was_found(answer)}")
    return GpuVerdict(name, device, f"GPU {index} on {sch.host_label()}: {memory_text(device)}")


def free_mib(queue: QueueState) -> float:
    """The free memory of the queue's GPU at its last probe (0 when never probed)."""
    return float((queue.gpu or {}).get("free_mib") or 0)
