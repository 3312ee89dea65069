"""`resumable init` writes a profile valid as written, with comments; `resumable version` says what
this tool deploys; every command takes --format the same way (issue 24, item 6)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import List

import pytest
import yaml
from conftest import ROOT

from resumable import __version__, cli
from resumable.cli import main
from resumable.releases import STACK_RELEASES


@pytest.mark.parametrize(
    "release, framework, level, storage",
    list(itertools.product(sorted(STACK_RELEASES), ["pytorch", "mindspore"], ["job", "pod", "process"], ["nfs", "sc"])),
)
def test_init_writes_a_profile_valid_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], release: str, framework: str, level: str, storage: str
) -> None:
    out = tmp_path / "profile.yaml"
    store = ["--nfs", "10.0.0.10:/exports/ai"] if storage == "nfs" else ["--storage-class", "cephfs"]
    argv = ["init", "--out", str(out), "--release", release, "--framework", framework, "--recovery", level, *store]
    assert main([*argv, "--nodes", "4", "--no-input"]) == 0
    assert "next: resumable validate" in capsys.readouterr().out
    assert main(["validate", "--strict", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert text.startswith("# A resumable-training profile written by `resumable init`")
    doc = yaml.safe_load(text)
    job = doc["jobs"][0]
    assert doc["cluster"]["mindcluster"] == release and job["nodes"] == 4 and job["image"]["framework"] == framework
    assert bool(job["recovery"].get("pod_rescheduling")) == (level != "job")
    assert bool(job["recovery"].get("strategies")) == (level == "process")
    for wheel in (job["image"].get("wheels") or {}).values():
        assert re.fullmatch(r"wheels/\w+-%s-py3-none-linux_aarch64\.whl" % re.escape(release), wheel["file"])


def test_init_never_replaces_a_file_and_refuses_bad_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine.yaml"
    out.write_text("my work")
    assert main(["init", "--out", str(out), "--no-input"]) == 2
    assert "exists already" in capsys.readouterr().err and out.read_text() == "my work"
    assert main(["init", "--out", str(tmp_path / "a.yaml"), "--nfs", "server-without-path", "--no-input"]) == 2
    assert "is not SERVER:/PATH" in capsys.readouterr().err
    assert main(["init", "--out", str(tmp_path / "b.yaml"), "--nodes", "0", "--no-input"]) == 2
    assert "nodes" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.yaml"]


def test_init_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--out", "-", "--no-input", "--recovery", "job", "--storage-class", "cephfs"]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["storage"] == {"storage_class": "cephfs"} and "wheels" not in doc["jobs"][0]["image"]


def test_version_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == __version__
    assert [r["release"] for r in info["deploys"]] == list(STACK_RELEASES)
    r731 = next(r for r in info["deploys"] if r["release"] == "7.3.1")
    assert {v["version"]: v["kubernetes"] for v in r731["volcano"]} == {
        "1.7.0": ["1.19", "1.28"],
        "1.9.0": ["1.21", "1.29"],
    }
    assert [v["version"] for v in r731["volcano"] if v["default"]] == ["1.9.0"]
    assert "26.1.0" in info["knows"]
    galaxy = yaml.safe_load((ROOT / "ansible_collections/ascend_resumable/npu/galaxy.yml").read_text())
    assert info["collection"] == {"name": "%s.%s" % (galaxy["namespace"], galaxy["name"]), "version": galaxy["version"]}


def _format_choices(name: str) -> List[str]:
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    cmd = sub.choices[name]  # type: ignore[index]
    (fmt,) = [a for a in cmd._actions if a.dest == "format"]
    return list(fmt.choices or [])


@pytest.mark.parametrize("name", ["validate", "plan", "schema", "version", "doctor", "timeline"])
def test_every_command_takes_format_the_same_way(name: str) -> None:
    choices = _format_choices(name)
    assert set(choices) <= {"text", "json", "yaml"} and "json" in choices


def test_schema_as_yaml_is_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--format", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert main(["schema", "--format", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json
