"""Shared fixtures of the Pulumi program's tests (the program, its components and stacks under mocks)."""

from __future__ import annotations

# The Pulumi mocks are set before any test module imports ``resumable_pulumi`` (which needs the
# repository root on sys.path, as Pulumi's language host has it): every module runs alone too.
from manifests.conftest import _cached_kubernetes_schemas  # noqa: F401  (kubernetes-validate's schemas read once)

from . import pulumi_mocks  # noqa: F401
