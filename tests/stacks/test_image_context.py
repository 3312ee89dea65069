"""The runtime image component over the real build context of issue 8 (no stand-in): a profile
whose wheel files exist gets a context holding the Dockerfile, exactly the plan's vendor wheels and
the profile, and pulumi-docker-build is asked to build that directory with those build args."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES, FIXTURES, ROOT

from .pulumi_mocks import MOCKS, pulumi_test, reset, settled

sys.path.insert(0, str(FIXTURES / "runtime"))

import build_fixtures

from resumable.api import load_plan
from resumable_pulumi.image import RuntimeImage, RuntimeImageArgs


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture()
def profile_with_wheels(tmp_path: Path) -> Path:
    if not build_fixtures.compiler():
        pytest.skip("no C compiler to build the fixture libtaskd.so (apt-get install gcc)")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    taskd = build_fixtures.build_taskd(str(wheels))
    mindio = build_fixtures.build_mindio_ttp(str(wheels))
    doc = yaml.safe_load((EXAMPLES / "pytorch-process-recovery.yaml").read_text(encoding="utf-8"))
    image = doc["jobs"][0]["image"]
    image["base"] = "registry.example.com/ascend/pytorch:2.7.1"
    image["wheels"] = {
        "taskd": {"file": "wheels/" + os.path.basename(taskd), "sha256": _sha(taskd)},
        "mindio_ttp": {"file": "wheels/" + os.path.basename(mindio), "sha256": _sha(mindio)},
    }
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


@pulumi_test
def test_image_is_built_from_the_real_context(profile_with_wheels: Path, tmp_path: Path) -> Any:
    reset()
    plan = load_plan(str(profile_with_wheels))
    job = plan.jobs[0]
    image = RuntimeImage(
        "rt",
        RuntimeImageArgs(
            plan=plan,
            job=job.name,
            tags=["registry.example.com/ai/train:1"],
            context_dir=str(tmp_path / "ctx"),
        ),
    )
    ctx = image.context
    wheels_dir = Path(ctx.path) / "wheels"
    expected = sorted(os.path.basename(w.file) for w in job.image.wheels if w.file)
    assert sorted(ctx.wheels) == expected and len(expected) == 2
    for name in expected:
        assert (wheels_dir / name).read_bytes() == (profile_with_wheels.parent / "wheels" / name).read_bytes()
    assert (Path(ctx.path) / "profile.yaml").is_file()
    assert ctx.build_args["BASE_IMAGE"] == "registry.example.com/ascend/pytorch:2.7.1"

    def check(_: Any) -> None:
        builds = [r for r in MOCKS.resources if r.typ == "docker-build:index:Image"]
        assert len(builds) == 1
        inputs: Dict[str, Any] = dict(builds[0].inputs)
        assert inputs["context"]["location"] == ctx.path
        assert Path(inputs["dockerfile"]["location"]).is_file()
        assert inputs["buildArgs"]["BASE_IMAGE"] == ctx.build_args["BASE_IMAGE"]
        assert inputs["platforms"] == ["linux/arm64"]

    assert image.image is not None
    return settled([image, image.image], check)


def test_a_tampered_wheel_fails_before_any_build(profile_with_wheels: Path, tmp_path: Path) -> None:
    import pulumi

    wheel = next((profile_with_wheels.parent / "wheels").glob("taskd-*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"x")
    reset()
    plan = load_plan(str(profile_with_wheels))
    with pytest.raises(pulumi.RunError, match="sha256"):
        RuntimeImage(
            "bad",
            RuntimeImageArgs(
                plan=plan, job=plan.jobs[0].name, tags=["r.example.com/t:1"], context_dir=str(tmp_path / "c")
            ),
        )
    assert not [r for r in MOCKS.resources if r.typ == "docker-build:index:Image"]


def test_a_preview_of_a_shipped_example_goes_on_without_its_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 24: `pulumi preview` of every shipped stack failed on the vendor wheels the example
    names; a preview now warns with what to place where and goes on (the job shows the tag it will
    push), `up` refuses with the same list before anything is built."""
    import pulumi

    warnings: List[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, resource=None, *a, **k: warnings.append(msg))
    plan = load_plan(str(EXAMPLES / "pytorch-process-recovery.yaml"))
    job = plan.jobs[0]
    args = RuntimeImageArgs(plan=plan, job=job.name, tags=[job.image.reference], context_dir=str(tmp_path / "c"))
    reset()
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: True)
    image = RuntimeImage("preview", args)
    assert image.image is None and not [r for r in MOCKS.resources if r.typ == "docker-build:index:Image"]
    (warning,) = warnings
    assert (
        "wheels/taskd-7.3.0-py3-none-linux_aarch64.whl (taskd 7.3.0, from Ascend-mindxdl-taskd_7.3.0_linux-aarch64.zip)"
        in warning
    )
    assert "mindio_ttp-7.3.0-py3-none-linux_aarch64.whl (mindio_ttp 7.3.0, from Ascend-mindxdl-mindio_7.3.0" in warning
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: False)
    with pytest.raises(pulumi.RunError, match=r"place .*taskd-7\.3\.0-py3-none-linux_aarch64\.whl"):
        RuntimeImage("up", args)
    assert not [r for r in MOCKS.resources if r.typ == "docker-build:index:Image"]


@pytest.mark.parametrize("name", sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml")))
def test_pulumi_preview_of_every_shipped_stack_goes_as_far_as_it_can(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 24: `pulumi preview` of every shipped stack stopped on the vendor wheels nobody has placed;
    the whole program now registers its resources, saying which files to place."""
    import pulumi

    from .pulumi_mocks import install_program, stack_config
    from .test_stacks import registrations

    warnings: List[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, resource=None, *a, **k: warnings.append(msg))
    monkeypatch.setattr(pulumi.runtime, "is_dry_run", lambda: True)
    install_program(monkeypatch, tmp_path)
    config = stack_config(ROOT / f"Pulumi.{name}.yaml")
    regs = registrations(config)
    assert [r for r in regs if r.type.startswith("kubernetes:")], "nothing was registered"
    profile = yaml.safe_load((ROOT / config["ascend-resumable:profile"]).read_text())
    prebuilt = config.get("ascend-resumable:images") or {}
    builds = config.get("ascend-resumable:stackRole", "all") != "cluster"
    wanted = [
        w["file"]
        for j in profile["jobs"]
        if builds and j["name"] not in prebuilt
        for w in (j["image"].get("wheels") or {}).values()
        if "file" in w
    ]
    for file in wanted:
        assert any(file in w for w in warnings), (file, warnings)
