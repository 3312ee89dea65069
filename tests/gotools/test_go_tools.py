"""tools/go_tools.py against the real go command (the module proxy of this machine)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import go_tools

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="no go command on PATH")


@pytest.fixture
def cold_module_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "gomodcache"
    monkeypatch.setenv("GOMODCACHE", str(cache))
    yield cache
    # Go makes its module cache read-only; its own command removes it.
    env = dict(os.environ, GOMODCACHE=str(cache))
    subprocess.run(["go", "clean", "-modcache"], env=env, check=False, capture_output=True)


def test_a_module_no_build_has_fetched_is_downloaded_for_its_directory(cold_module_cache: Path) -> None:
    """On a cold module cache `go list -m -f {{.Dir}}` prints nothing for a module not yet fetched:
    the provider's embedded schema was read from the relative path cmd/... and the first `make
    tools` on a new machine failed (seen on a fresh machine, 2026-12-03)."""
    wrapper = go_tools.TOOLS["etcd"].source
    directory = go_tools.module_dir("go.etcd.io/etcd/api/v3", wrapper)
    assert directory.is_absolute() and directory.is_relative_to(cold_module_cache)
    assert (directory / "go.mod").read_text(encoding="utf-8").startswith("module go.etcd.io/etcd/api/v3")


def test_a_module_the_wrapper_does_not_require_is_a_tool_error(cold_module_cache: Path) -> None:
    with pytest.raises(go_tools.ToolError, match=r"example\.invalid/nothing"):
        go_tools.module_dir("example.invalid/nothing", go_tools.TOOLS["etcd"].source)
