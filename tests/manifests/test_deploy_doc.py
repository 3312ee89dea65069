"""docs/deploy.md run as written: the walkthrough without Pulumi (init, validate, plan, image context,
render, the kubectl layers, the overlay) and with it (the config the page sets, through the program).

``resumable`` lines run in a scratch directory as the page has them. The kubectl lines must be the
renderer's own (:func:`resumable.manifests.render.apply_steps` and friends) and run against the
control plane of issue 23 when its ``kube_cluster`` fixture exists (contract in
tests/manifests/test_render_apiserver.py); the ``pulumi config set`` lines become the config the
program runs with under Pulumi's mocks until the real engine runs them."""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import ROOT
from stacks.pulumi_mocks import PROJECT, install_program
from stacks.test_stacks import registrations

from resumable.cli import main as resumable
from resumable.manifests.render import Step, apply_steps, delete_job_steps, diff_steps

from .test_render_apiserver import kube_cluster_or_skip

DOC = ROOT / "docs" / "deploy.md"


def blocks(lang: str) -> List[str]:
    return re.findall(r"```%s\n(.*?)```" % lang, DOC.read_text(encoding="utf-8"), flags=re.S)


def commands(prefix: str) -> List[List[str]]:
    out = []
    for block in blocks("sh"):
        for line in block.splitlines():
            line = line.split("   # ")[0].strip()
            if line.startswith(prefix + " "):
                out.append(shlex.split(line))
    return out


def place_wheels(profile: Path) -> None:
    """What the page asks: the wheel files where the profile says, their sha256 in the profile (test
    files standing for the vendor's)."""
    doc = yaml.safe_load(profile.read_text())
    for job in doc["jobs"]:
        for entry in (job["image"].get("wheels") or {}).values():
            path = profile.parent / entry["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"test wheel " + path.name.encode())
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    profile.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture()
def walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """Sections 1 to 4 of the page, run in ``tmp_path`` as written."""
    monkeypatch.chdir(tmp_path)
    validated = 0
    for argv in commands("resumable"):
        if argv[1] == "validate":
            validated += 1
            if validated == 2:
                # "Then edit it": uncomment image.registry and image.base, as the page says
                text = Path(argv[-1]).read_text()
                Path(argv[-1]).write_text(text.replace("# registry:", "registry:").replace("# base:", "base:"))
        if argv[1:3] == ["image", "context"]:
            assert resumable(argv[1:]) == 2, "the wheels are not there yet"
            err = capsys.readouterr().err
            assert "wheels/taskd-7.3.2-py3-none-linux_aarch64.whl (taskd 7.3.2, from Ascend-mindxdl-taskd_7.3.2" in err
            place_wheels(Path(argv[2 + 1]))
            assert resumable(argv[1:]) == 0
            printed = capsys.readouterr().out.splitlines()
            assert "-t registry.example.com/ai/train:7.3.2" in printed[1] and printed[1].startswith("podman build")
            assert printed[2] == "podman push registry.example.com/ai/train:7.3.2"
            continue
        assert resumable(argv[1:]) == 0, (argv, capsys.readouterr().err)
    assert validated == 2, "the page validates, edits the profile and validates it again"
    return tmp_path


def test_the_walkthrough_without_pulumi(walked: Path) -> None:
    rendered = walked / "rendered"
    assert sorted(p.name for p in rendered.iterdir() if p.is_dir()) == ["1-crds", "2-cluster", "3-storage", "4-jobs"]
    kubectl = commands("kubectl")
    expected = [list(s.argv) for s in [*apply_steps("rendered", ["train"]), *diff_steps("rendered", ["train"])]]
    expected += [list(s.argv) for s in delete_job_steps("rendered", "train")]
    assert kubectl[: len(expected)] == expected, "the page's kubectl lines are the renderer's"
    overlay = yaml.safe_load(blocks("yaml")[0])
    (layer,) = overlay["resources"]
    assert (walked / "overlay" / layer).resolve() == (rendered / "4-jobs" / "train").resolve()
    target = overlay["patches"][0]["target"]
    names = yaml.safe_load((rendered / "4-jobs" / "train" / "Kustomization").read_text())["resources"]
    objs = [yaml.safe_load((rendered / "4-jobs" / "train" / n).read_text()) for n in names]
    assert [(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] == target["kind"]] == [
        (target["kind"], target["name"])
    ]


@pytest.mark.cluster
def test_the_kubectl_lines_against_the_api_server(walked: Path, request: pytest.FixtureRequest) -> None:
    expected = [list(s.argv) for s in [*apply_steps("rendered", ["train"]), *diff_steps("rendered", ["train"])]]
    expected += [list(s.argv) for s in delete_job_steps("rendered", "train")]
    cluster = kube_cluster_or_skip(request)
    for argv in expected:
        if "--for=condition=Complete" in argv and not cluster.runs_pods:
            continue  # KWOK runs no container: the prepare Job never completes there
        cluster.run(Step(tuple(argv), "the page"), check=argv[1] != "diff")


def test_the_walkthrough_with_pulumi(walked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config: Dict[str, Any] = {}
    for argv in commands("pulumi"):
        if argv[1:3] == ["config", "set"]:
            key, value = argv[3], argv[4]
            # the program runs from the project directory (as Pulumi does): the profile by its full path
            config["%s:%s" % (PROJECT, key)] = str(walked / value) if key == "profile" else value
    assert [a[1] for a in commands("pulumi") if a[1] != "config"] == ["stack", "preview", "up"]
    install_program(monkeypatch, walked)
    regs = registrations(config)
    kinds = {
        (r.inputs.get("kind"), r.inputs.get("metadata", {}).get("name"))
        for r in regs
        if r.type.startswith("kubernetes:")
    }
    assert ("Job", "train-prepare-storage") in kinds and ("AscendJob", "train") in kinds
    (built,) = [r for r in regs if r.type == "docker-build:index:Image"]
    assert built.inputs["tags"] == ["registry.example.com/ai/train:7.3.2"]
