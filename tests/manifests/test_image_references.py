"""Image references and image names come from resumable/formats.py only: a reference that
``resumable validate`` accepts in a profile (``image.name``), ``render --image`` accepts and the
Pulumi stack config (``images``) accepts are the same references, and the name of a built image
is one rule whether ``resumable render`` or ``pulumi up`` names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Optional

import pulumi
import pytest
import yaml
from conftest import example_profile

from resumable import formats as F
from resumable.api import load_plan
from resumable.errors import ResumableError
from resumable.manifests.deployment import default_image
from resumable.manifests.settings import check_images
from resumable.plan.model import Plan
from resumable_pulumi.config import StackConfig, read_config
from resumable_pulumi.program import image_tags

EXAMPLE = "pytorch-process-recovery"
JOB = "llama-pretrain"

#: references either side of the grammar's edges (distribution/reference regexp.go)
REFERENCES = [
    "registry.example.com/ai/mindspeed-llm:2.3.0",
    "mindspeed-llm",
    "localhost:5000/train:v1",
    "[::1]:5000/train:latest",
    "registry.example.com/ai/llama@sha256:" + "a" * 64,
    "registry.example.com/ai/llama:1.0@sha256:" + "b" * 64,
    "a__b/c--d/e.f_g:T_a-g.1",
    "x" * 200 + "/y:1",
    "Registry.Example.com/ai/llama:1",
    "registry.example.com/AI/llama:1",
    "registry.example.com/ai/llama:",
    "registry.example.com/ai/llama:" + "t" * 129,
    "registry.example.com//llama:1",
    "registry.example.com/ai/llama:1 ",
    " registry.example.com/ai/llama:1",
    "registry.example.com/ai/llama:1\n",
    "registry.example.com/ai/llama@sha256:abc",
    "-leading/dash:1",
    "ai/llama:-tag",
    "ai/llama:\uff17",
    "x" * 300 + "/y:1",
    "r.example.com/" + "a/" * 300 + "b:1",
]


def _validate_accepts(profile: Path, tmp_path: Path, ref: str) -> bool:
    doc = yaml.safe_load(profile.read_text())
    (job,) = [j for j in doc["jobs"] if j["name"] == JOB]
    job["image"]["name"] = ref
    path = tmp_path / ("p%d.yaml" % abs(hash(ref)))
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    try:
        load_plan(str(path))
    except ResumableError as exc:
        assert "image.name" in str(exc), str(exc)  # the example is otherwise valid
        return False
    return True


def _config(profile: Path, **values: object) -> StackConfig:
    pulumi.runtime.set_all_config(
        {
            "ascend-resumable:profile": str(profile),
            **{"ascend-resumable:%s" % k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()},
        }
    )
    try:
        return read_config(pulumi.Config("ascend-resumable"))
    finally:
        pulumi.runtime.set_all_config({})


def _config_accepts(profile: Path, ref: str) -> bool:
    try:
        _config(profile, images={JOB: ref})
    except pulumi.RunError as exc:
        assert "images.%s" % JOB in str(exc), str(exc)
        return False
    return True


def _render_accepts(ref: str) -> bool:
    try:
        check_images({"clusterd": ref})
    except ResumableError:
        return False
    return True


def test_validate_render_and_the_pulumi_config_accept_the_same_references(tmp_path: Path) -> None:
    profile = example_profile(EXAMPLE, tmp_path)
    verdicts: Dict[str, Optional[bool]] = {}
    for ref in REFERENCES:
        by_validate = _validate_accepts(profile, tmp_path, ref)
        assert _config_accepts(profile, ref) == by_validate, ref
        assert _render_accepts(ref) == by_validate, ref
        verdicts[ref] = by_validate
    # the corpus has both kinds, so the comparison can fail either way
    assert sum(1 for v in verdicts.values() if v) >= 5
    assert sum(1 for v in verdicts.values() if not v) >= 5


@pytest.fixture
def unnamed(tmp_path: Path) -> Plan:
    """The example's plan with no image.name: the image is built and named by the one rule."""
    profile = example_profile(EXAMPLE, tmp_path)
    doc = yaml.safe_load(profile.read_text())
    for job in doc["jobs"]:
        job["image"].pop("name", None)
    profile.write_text(yaml.safe_dump(doc))
    return load_plan(str(profile))


def test_render_and_pulumi_name_a_built_image_by_the_one_rule(tmp_path: Path, unnamed: Plan) -> None:
    job = unnamed.jobs[0]
    release = unnamed.scheduler.release
    assert default_image(unnamed, job) == F.built_image_reference(job.name, release)
    assert default_image(unnamed, job) == "ascend-resumable/%s:%s" % (job.name, release)
    cfg = _config(Path(unnamed.profile), imageRegistry="registry.example.com/ai")
    assert image_tags(cfg, unnamed, job) == [F.built_image_reference(job.name, release, "registry.example.com/ai")]
    # the registry format allows a trailing "/"; the reference does not double it
    slash = F.built_image_reference(job.name, release, "registry.example.com/ai/")
    assert slash == F.built_image_reference(job.name, release, "registry.example.com/ai")
    assert F.problem(F.IMAGE, slash) is None, slash
    assert image_tags(cfg, unnamed, job) == ["registry.example.com/ai/%s:%s" % (job.name, release)]
    for ref in (default_image(unnamed, job), *image_tags(cfg, unnamed, job)):
        assert F.problem(F.IMAGE, ref) is None, ref


def test_pulumi_pushes_to_the_profiles_image_registry(tmp_path: Path) -> None:
    """A job without image.name but with image.registry: render, `image context` and the stack all
    name ``<image.registry>/<job>:<release>``; config imageRegistry still wins for the stack."""
    profile = example_profile(EXAMPLE, tmp_path)
    doc = yaml.safe_load(profile.read_text())
    del doc["jobs"][0]["image"]["name"]
    doc["jobs"][0]["image"]["registry"] = "harbor.corp.local/ai"
    profile.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = load_plan(str(profile))
    job = plan.jobs[0]
    assert default_image(plan, job) == job.image.reference == "harbor.corp.local/ai/%s:7.3.0" % JOB
    assert image_tags(_config(profile), plan, job) == [job.image.reference]
    other = image_tags(_config(profile, imageRegistry="registry.example.com/ai"), plan, job)
    assert other == ["registry.example.com/ai/%s:7.3.0" % JOB]


@pytest.mark.parametrize(
    ("reference", "host"),
    [
        ("registry.example.com/ai/llama:1", "registry.example.com"),
        ("localhost:5000/train:v1", "localhost:5000"),
        ("localhost/train", "localhost"),
        ("ai/llama:1", "docker.io"),
        ("llama", "docker.io"),
        ("registry.example.com", "docker.io"),
    ],
)
def test_registry_host(reference: str, host: str) -> None:
    assert F.registry_host(reference) == host
