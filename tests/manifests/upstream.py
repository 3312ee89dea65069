"""Where the upstream release manifests are (reference data, never copied into the project)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import UPSTREAM as DEFAULT


def upstream_root() -> Path:
    return Path(os.environ.get("ASCEND_RESUMABLE_UPSTREAM", str(DEFAULT)))


def release_dir(release: str) -> Path:
    """``<upstream>/mindcluster/v<release>``, for a patch release its base release's (identical at the tags:
    resumable.releases.PATCH_RELEASES); skips the test when the folder is absent."""
    from resumable.releases import PATCH_RELEASES

    path = upstream_root() / "mindcluster" / f"v{PATCH_RELEASES.get(release, release)}"
    if not path.is_dir():
        import pytest  # here: tests/manifests/check_rendered.py (make demo) uses upstream_root without pytest

        pytest.skip(
            f"upstream manifests not found at {path} (the ../shared/upstream folder beside the repo, "
            "or set ASCEND_RESUMABLE_UPSTREAM)"
        )
    return path
