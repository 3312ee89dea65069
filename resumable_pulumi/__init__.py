"""Pulumi components of ascend-resumable (they consume the plan; they decide nothing themselves).

Each is a ``ComponentResource`` with a typed args dataclass; children are parented to it and the
Kubernetes provider comes from the program through ``opts``. :func:`deploy` is the whole stack of
this project's ``__main__.py``; a program of your own can call it or use the components directly
(docs/pulumi.md, "A program of your own").
"""

from __future__ import annotations

from .image import RuntimeImage, RuntimeImageArgs
from .jobs import TrainingJobs, TrainingJobsArgs
from .program import deploy
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
    "deploy",
]
