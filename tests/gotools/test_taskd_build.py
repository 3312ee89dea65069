"""tools/taskd_build.py: which releases it finds and what keys a build (no Go build runs here)."""

import sys
from pathlib import Path
from typing import Tuple

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import taskd_build
from go_tools import ToolError

GO = "go1.26.8 linux amd64"


def upstream(tmp_path: Path, tag: str = "v26.1.0", components: Tuple[str, ...] = taskd_build.COMPONENTS) -> Path:
    """A source tree shaped like ../shared/upstream/src: mind-cluster/<tag>/{COMMIT,component/...}."""
    root = tmp_path / "src"
    release = root / "mind-cluster" / tag
    for name in components:
        (release / "component" / name).mkdir(parents=True)
        (release / "component" / name / "main.go").write_text("package %s\n" % name.replace("-", ""))
    (release / "COMMIT").write_text("0123456789abcdef\n")
    return root


def test_a_release_is_found_only_with_every_component_its_go_module_replaces(tmp_path: Path) -> None:
    root = upstream(tmp_path)
    upstream(tmp_path, "v7.3.0", ("taskd", "ascend-common", "clusterd"))  # no ascend-faultdiag-online
    found = taskd_build.releases(root)
    assert list(found) == ["26.1.0"]
    assert found["26.1.0"].commit == "0123456789abcdef" and found["26.1.0"].build_version == "v26.1.0"
    assert taskd_build.release_named("v26.1.0", root) == found["26.1.0"]
    with pytest.raises(ToolError, match=r"no TaskD source for release 7\.3\.0 under .*mind-cluster.*: 26\.1\.0"):
        taskd_build.release_named("7.3.0", root)


def test_the_key_follows_the_sources_the_recipe_and_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = taskd_build.releases(upstream(tmp_path))["26.1.0"]
    key = taskd_build.build_key(release, GO)
    assert taskd_build.build_key(release, GO) == key  # stable
    assert taskd_build.build_key(release, "go1.27.0 linux amd64") != key
    # a file of a replaced module (not only taskd's own) changes the key, and putting it back restores it
    replaced = release.src / "clusterd" / "main.go"
    replaced.write_text("package clusterd // changed\n")
    assert taskd_build.build_key(release, GO) != key
    replaced.write_text("package clusterd\n")
    assert taskd_build.build_key(release, GO) == key
    (release.src / "ascend-common" / "new.go").write_text("package ascendcommon\n")
    assert taskd_build.build_key(release, GO) != key
    (release.src / "ascend-common" / "new.go").unlink()
    monkeypatch.setattr(taskd_build, "SETUPTOOLS", "0.0.1")
    assert taskd_build.build_key(release, GO) != key


def test_a_wheel_is_given_only_when_its_bytes_match_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCEND_RESUMABLE_TOOLS_CACHE", str(tmp_path / "cache"))
    release = taskd_build.releases(upstream(tmp_path))["26.1.0"]
    with pytest.raises(ToolError, match="not built"):
        taskd_build.wheel_path(release, GO)
    directory = taskd_build.release_dir(release, GO)
    directory.mkdir(parents=True)
    wheel = directory / "taskd-26.1.0-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"PK wheel")
    record = '{"wheel": "%s", "sha256": "%s"}' % (wheel.name, taskd_build.sha256_of(wheel))
    (directory / "BUILT.json").write_text(record)
    assert taskd_build.wheel_path(release, GO) == wheel
    wheel.write_bytes(b"PK other")
    with pytest.raises(ToolError, match="differs from its build record"):
        taskd_build.wheel_path(release, GO)
