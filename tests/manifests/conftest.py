"""Shared fixtures of the stack tests."""

from __future__ import annotations

import functools
from typing import Any, Iterator

import pytest

# The Pulumi mocks are set before any test module imports ``resumable_pulumi`` (which needs the
# repository root on sys.path, as Pulumi's language host has it): every module runs alone too.
from stacks import pulumi_mocks  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def _cached_kubernetes_schemas() -> Iterator[None]:
    """kubernetes-validate re-reads its (large) JSON schema files on every call; read each once.
    Only file reading is cached, validation itself is unchanged."""
    import kubernetes_validate.utils as utils

    cached: Any = functools.lru_cache(maxsize=None)(utils.schema_contents)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(utils, "schema_contents", cached)
        yield
