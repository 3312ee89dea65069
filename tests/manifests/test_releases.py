"""The releases people run (issue 24): 7.3.1, 7.3.2 and 26.0.1 deploy with their base release's
manifests; a release newer than the tool says so with the upgrade advice; Huawei's registry tags
from 26.1.0 carry the OS flavour; the 26.1.0 facts (hang detection, reset timeout, the gloo known
issue) are in the plan."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from conftest import EXAMPLES

from resumable.api import load_plan
from resumable.cli import main
from resumable.manifests import build_deployment

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


def profile(tmp_path: Path, release: str, **scheduler: Any) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["cluster"]["mindcluster"] = release
    doc["scheduler"].update(scheduler)
    doc.pop("acknowledge", None)
    for job in doc["jobs"]:
        job["image"].pop("wheels", None)
        for wheel in ("taskd", "mindio_ttp"):
            job["image"][wheel] = release
    doc["acknowledge"] = ["wheel-file"]
    path = tmp_path / ("profile-%s.yaml" % release)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("release, base", [("7.3.1", "7.3.0"), ("7.3.2", "7.3.0"), ("26.0.1", "26.0.0")])
def test_patch_releases_deploy_the_manifests_of_their_base(tmp_path: Path, release: str, base: str) -> None:
    """issue 24: render refused them ("cannot be deployed by this project")."""
    assert main(["render", str(profile(tmp_path, release)), "--out", str(tmp_path / "out")]) == 0

    def stack(r: str) -> str:
        layers = build_deployment(load_plan(str(profile(tmp_path, r)))).layers()
        return yaml.safe_dump([o for layer in layers[:2] for o in layer.objects])

    ours, theirs = stack(release), stack(base)
    # the same scheduling stack, but for the release's own image tags and plugin name (7.3.1: no _linux-<arch>)
    plugins = set(re.findall(r"volcano-npu_v[0-9A-Za-z._-]*", ours))
    assert plugins == {"volcano-npu_v%s" % release}, plugins
    normalised = re.sub(r"volcano-npu_v[0-9A-Za-z._-]*", "PLUGIN", ours).replace("v" + release, "v" + base)
    assert normalised == re.sub(r"volcano-npu_v[0-9A-Za-z._-]*", "PLUGIN", theirs)


def test_a_newer_release_says_so_and_how_to_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 24: 26.2.0 was called "not a MindCluster release"."""
    assert main(["validate", str(profile(tmp_path, "26.2.0"))]) == 2
    err = capsys.readouterr().err
    assert "MindCluster 26.2.0 is newer than this ascend-resumable knows (it knows up to 26.1.0)" in err
    assert "Upgrade ascend-resumable" in err and "not a MindCluster release" not in err
    assert main(["validate", str(profile(tmp_path, "7.3.RC1"))]) == 2
    assert "'7.3.RC1' is not a MindCluster release" in capsys.readouterr().err


def images(path: Path) -> Dict[str, str]:
    out = {}
    for o in build_deployment(load_plan(str(path))).objects():
        if o["kind"] in ("Deployment", "DaemonSet"):
            out[o["metadata"]["name"]] = o["spec"]["template"]["spec"]["containers"][0]["image"]
    return out


def test_registry_tags_as_huaweis_registry_has_them(tmp_path: Path) -> None:
    """issue 24: on 26.1.0 the registry's tags are v26.1.0-<os>; v26.1.0 does not exist there."""
    swr = "swr.cn-south-1.myhuaweicloud.com/ascendhub"
    tagged = images(profile(tmp_path, "26.1.0", image_registry=swr))
    assert tagged["clusterd"] == swr + "/clusterd:v26.1.0-openeuler24.03"
    assert tagged["volcano-scheduler"] == swr + "/vc-scheduler:v1.9.0-v26.1.0-openeuler24.03"
    ubuntu = images(profile(tmp_path, "26.1.0", image_registry=swr, image_os="ubuntu22.04"))
    assert ubuntu["clusterd"] == swr + "/clusterd:v26.1.0-ubuntu22.04"
    assert ubuntu["volcano-controllers"] == swr + "/vc-controller-manager:v1.9.0-v26.1.0-alpinelatest"
    older = images(profile(tmp_path, "26.0.1", image_registry=swr))
    assert older["clusterd"] == swr + "/clusterd:v26.0.1" and older["volcano-scheduler"].endswith(":v1.9.0-v26.0.1")
    local = images(profile(tmp_path, "26.1.0"))
    assert local["clusterd"] == "clusterd:v26.1.0", "local names (the release zip's) carry no OS flavour"


def test_the_26_1_0_facts_are_in_the_plan(tmp_path: Path) -> None:
    plan = load_plan(str(profile(tmp_path, "26.1.0")))
    (job,) = plan.jobs
    hang = job.budget.hang_detection
    device_plugin = [t for t in hang if "device plugin" in t.assumption]
    assert [t.seconds for t in device_plugin] == [300.0] and "200001002" in device_plugin[0].assumption
    assert "hang_detector.go" in device_plugin[0].source
    assert hang == sorted(hang, key=lambda t: t.seconds) and hang[0].seconds == job.launcher.hang_timeout
    notes = " ".join(n.text for n in job.notes)
    assert "wait up to 600 s (-deviceResetTimeout default, 60 s up to 26.0)" in notes
    assert "gloo may end with a segmentation fault" in notes and "falls back to Job-level rescheduling" in notes
    older = load_plan(str(profile(tmp_path, "26.0.1"))).jobs[0]
    assert not [t for t in older.budget.hang_detection if "device plugin" in t.assumption]
    assert "gloo" not in " ".join(n.text for n in older.notes)
    assert "deviceResetTimeout" not in " ".join(n.text for n in older.notes)
