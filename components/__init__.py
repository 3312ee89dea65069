"""Pulumi components of ascend-resumable (they consume the plan; they decide nothing themselves)."""

from __future__ import annotations

from .scheduler import MindClusterScheduler, MindClusterSchedulerArgs

__all__ = ["MindClusterScheduler", "MindClusterSchedulerArgs"]
