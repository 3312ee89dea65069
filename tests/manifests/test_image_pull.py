"""An image the job can pull (issue 24): the build line tags and pushes the reference the job runs,
the training pods name the profile's pull Secrets, a stack image named by a registry is pulled,
and a missing vendor wheel file is named with where it goes and the release zip it comes in."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES, example_profile

from resumable.api import load_plan
from resumable.cli import main
from resumable.manifests import build_deployment

EXAMPLE = "pytorch-process-recovery"
JOB = "llama-pretrain"


def edited(tmp_path: Path, edit: Any) -> Path:
    """The example with its wheel files in place (test files), edited by ``edit(doc)``."""
    path = example_profile(EXAMPLE, tmp_path)
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def context_lines(profile: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> List[List[str]]:
    assert main(["image", "context", str(profile), "--out", str(out), *extra]) == 0
    printed = capsys.readouterr().out.splitlines()
    return [shlex.split(line) for line in printed[1:]]


def pods(plan_path: Path) -> List[Dict[str, Any]]:
    objs = build_deployment(load_plan(str(plan_path))).stage("jobs").objects
    job = next(o for o in objs if o["kind"] == "AscendJob")
    return [spec["template"]["spec"] for spec in job["spec"]["replicaSpecs"].values()]


def without_name(doc: Dict[str, Any], registry: Any = None) -> None:
    image = doc["jobs"][0]["image"]
    del image["name"]
    if registry:
        image["registry"] = registry


def test_the_build_line_tags_and_pushes_what_the_job_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 24: `image context` printed a build line with no -t and no push, and a job without
    image.name ran a Docker Hub name nobody pushed."""
    profile = edited(tmp_path, lambda d: without_name(d, "harbor.corp.local/ai"))
    ref = "harbor.corp.local/ai/%s:7.3.0" % JOB
    build, push = context_lines(profile, tmp_path / "ctx", capsys)
    assert build[:4] == ["podman", "build", "--platform", "linux/arm64"]
    assert build[build.index("-t") + 1] == ref and build[-1] == str(tmp_path / "ctx")
    assert push == ["podman", "push", ref]
    assert {p["containers"][0]["image"] for p in pods(profile)} == {ref}
    docker = context_lines(profile, tmp_path / "ctx", capsys, "--builder", "docker")
    assert docker[0][:6] == ["docker", "buildx", "build", "--load", "--platform", "linux/arm64"]
    assert docker[1] == ["docker", "push", ref]


def test_a_named_image_is_tagged_and_pushed_as_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = example_profile(EXAMPLE, tmp_path)
    build, push = context_lines(profile, tmp_path / "ctx", capsys)
    assert build[build.index("-t") + 1] == "registry.example.com/ai/mindspeed-llm:2.3.0"
    assert push == ["podman", "push", "registry.example.com/ai/mindspeed-llm:2.3.0"]


def test_a_local_name_is_tagged_not_pushed_and_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = edited(tmp_path, without_name)
    assert main(["image", "context", str(profile), "--out", str(tmp_path / "ctx")]) == 0
    out, err = capsys.readouterr()
    (build,) = [shlex.split(line) for line in out.splitlines()[1:]]
    assert build[build.index("-t") + 1] == "ascend-resumable/%s:7.3.0" % JOB
    assert "is a local name" in err and "image.registry" in err


def test_training_pods_name_the_profile_pull_secrets(tmp_path: Path) -> None:
    """issue 24: scheduler.image_pull_secrets reached the stack's workloads, never the training pods."""
    profile = edited(tmp_path, lambda d: d["jobs"][0]["image"].update(pull_secrets=["regcred", "mirror"]))
    for pod in pods(profile):
        assert pod["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}]
    assert all("imagePullSecrets" not in p for p in pods(example_profile(EXAMPLE, tmp_path / "plain")))


def stack_pull_policies(profile: Path) -> Dict[str, str]:
    objs = build_deployment(load_plan(str(profile))).objects()
    out = {}
    for o in objs:
        if o["kind"] in ("Deployment", "DaemonSet"):
            for c in o["spec"]["template"]["spec"]["containers"]:
                out[o["metadata"]["name"]] = c["imagePullPolicy"]
    return out


def test_a_registry_without_a_pull_policy_is_pulled(tmp_path: Path) -> None:
    """issue 24: image_registry: harbor.corp.local/mindx rendered imagePullPolicy Never everywhere
    (ErrImageNeverPull) without a word."""
    profile = edited(tmp_path, lambda d: d["scheduler"].update(image_registry="harbor.corp.local/mindx"))
    assert set(stack_pull_policies(profile).values()) == {"IfNotPresent"}
    notes = [n.text for n in load_plan(str(profile)).scheduler.notes]
    assert any("pulled from harbor.corp.local/mindx" in n for n in notes)
    explicit = edited(
        tmp_path / "x",
        lambda d: d["scheduler"].update(image_registry="harbor.corp.local/mindx", image_pull_policy="Never"),
    )
    assert set(stack_pull_policies(explicit).values()) == {"Never"}, "what the user chose stays"
    assert stack_pull_policies(EXAMPLES / (EXAMPLE + ".yaml"))["noded"] == "Never"


def test_missing_vendor_wheels_are_named_with_where_they_go(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """issue 24: the first command of README's "Launch training" failed on every shipped example without
    saying what to place where."""
    assert main(["image", "context", str(EXAMPLES / (EXAMPLE + ".yaml")), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    wheels = EXAMPLES / "wheels"
    assert "place %s/taskd-7.3.0-py3-none-linux_aarch64.whl (taskd 7.3.0, from " % wheels in err
    assert "Ascend-mindxdl-taskd_7.3.0_linux-aarch64.zip)" in err
    assert "%s/mindio_ttp-7.3.0-py3-none-linux_aarch64.whl (mindio_ttp 7.3.0, from " % wheels in err
    assert "Ascend-mindxdl-mindio_7.3.0_linux-aarch64.zip" in err
    assert not (tmp_path / "c").exists()
