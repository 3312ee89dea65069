"""The Pulumi components are importable under their own package name, so a user's own Pulumi
program can ``import resumable_pulumi`` (the wheel carrying them: tests/cli/test_wheel.py)."""

from __future__ import annotations

import resumable_pulumi


def test_a_program_of_ones_own_finds_the_public_names() -> None:
    for name in ("MindClusterScheduler", "SharedStorage", "RuntimeImage", "TrainingJobs", "deploy"):
        assert hasattr(resumable_pulumi, name), name
