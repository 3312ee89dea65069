"""Pulumi components of ascend-resumable (they consume the plan; they decide nothing themselves).

Each is a ``ComponentResource`` with a typed args dataclass; children are parented to it and the
Kubernetes provider comes from the program (``__main__.py``) through ``opts``.
"""

from __future__ import annotations

from .image import RuntimeImage, RuntimeImageArgs
from .jobs import TrainingJobs, TrainingJobsArgs
from .scheduler import MindClusterScheduler, MindClusterSchedulerArgs
from .storage import SharedStorage, SharedStorageArgs

__all__ = [
    "MindClusterScheduler",
    "MindClusterSchedulerArgs",
    "RuntimeImage",
    "RuntimeImageArgs",
    "SharedStorage",
    "SharedStorageArgs",
    "TrainingJobs",
    "TrainingJobsArgs",
]
