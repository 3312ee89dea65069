"""images/runtime/Dockerfile built with podman (``make runtime-image`` / scripts/test-runtime-image.sh).

The base is localhost/resumable-runtime-base (scripts/build-runtime-base.sh: Debian 12 from
debootstrap, a virtualenv with the real torch 2.13.0 CPU wheel, PyYAML, grpcio, protobuf). The test
puts a decoy package index into it (``PIP_INDEX_URL``) that serves public look-alikes named taskd
and mindio_ttp, and builds without network: the vendor wheels must come from the build context.
Checked: resumable on PATH; the run.py line exactly once, also after a second build on top; the
fixture wheels installed, not the decoys; a tampered wheel fails the build; HwHiAiUser 1000 (and a
base that gives uid 1000 to another account fails); ``resumable launch --dry-run`` and
``resumable doctor`` inside; a short training run through the image's entrypoint with the TaskD
fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Dict, Iterator, List

import build_fixtures
import pytest
from conftest import ROOT

from resumable.api import load_plan
from resumable.image.context import PROFILE_NAME, ImageContext, prepare_context

from .conftest import FIXTURES, profile_text, write

pytestmark = pytest.mark.slow
BASE = "localhost/resumable-runtime-base:latest"
RUN_PY = "/usr/local/python/lib/python3.11/site-packages/torch/distributed/run.py"
TASKD_LINE = "import taskd.python.adaptor.patch"


def _enabled() -> bool:
    return os.environ.get("RESUMABLE_IMAGE_TEST") == "1"


if not _enabled():
    pytest.skip("the image test runs in `make runtime-image` (scripts/test-runtime-image.sh)", allow_module_level=True)


def podman(*args: str, check: bool = True, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CONTAINERS_CONF=str(ROOT / "podman" / "containers.conf"))
    proc = subprocess.run(["podman", *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            "podman %s failed (%d):\n%s\n%s"
            % (" ".join(args), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
        )
    return proc


class Images:
    """Tags this test creates (and removes again); nothing else is touched."""

    def __init__(self) -> None:
        self.run = uuid.uuid4().hex[:8]
        self.tags: List[str] = []

    def tag(self, name: str) -> str:
        tag = "localhost/resumable-test-%s:%s" % (name, self.run)
        self.tags.append(tag)
        return tag

    def build(self, ctx: ImageContext, tag: str, base: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # --layers=false: no intermediate images are left behind once the tags are removed
        args = ["build", "--network=none", "--layers=false", "-f", ctx.dockerfile, "-t", tag]
        for key, value in dict(ctx.build_args, BASE_IMAGE=base).items():
            args += ["--build-arg", "%s=%s" % (key, value)]
        return podman(*args, ctx.path, check=check)

    def sh(self, tag: str, script: str, *extra: str) -> str:
        return podman("run", "--rm", "--network=none", *extra, "--entrypoint", "sh", tag, "-c", script).stdout


@pytest.fixture(scope="module")
def images() -> Iterator[Images]:
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed: scripts/test-runtime-image.sh installs it (as root)")
    if podman("image", "exists", BASE, check=False).returncode != 0:
        pytest.fail("%s is missing: scripts/build-runtime-base.sh builds it" % BASE)
    made = Images()
    yield made
    for tag in made.tags:
        podman("rmi", "--force", tag, check=False)


@pytest.fixture(scope="module")
def poisoned(images: Images, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The base with a package index that serves public look-alikes of the vendor wheels."""
    ctx = tmp_path_factory.mktemp("poisoned")
    for name, project in (("taskd", "taskd"), ("mindio_ttp", "mindio-ttp")):
        wheel = Path(build_fixtures.build_decoy(str(ctx / "decoy" / "simple" / project), name))
        write(wheel.parent / "index.html", '<a href="%s">%s</a>\n' % (wheel.name, wheel.name))  # PEP 503 page
    write(
        ctx / "Containerfile",
        "FROM %s\nCOPY decoy /opt/decoy\n"
        "ENV PIP_INDEX_URL=file:///opt/decoy/simple PIP_EXTRA_INDEX_URL= PIP_FIND_LINKS=\n" % BASE,
    )
    tag = images.tag("poisoned")
    podman("build", "--network=none", "--layers=false", "-t", tag, str(ctx))
    # the decoy works: installing by name from this base's index gets the look-alike
    out = images.sh(
        tag,
        "pip install --quiet --no-deps --target /tmp/t taskd && "
        "PYTHONPATH=/tmp/t python -c 'import taskd; print(taskd.DECOY)'",
    )
    assert out.strip().endswith("True")
    return tag


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> ImageContext:
    tmp = tmp_path_factory.mktemp("image")
    wheels = {
        # the double whose launch_agent takes torch 2.13's keywords: TaskD 7.3.0 as released is refused
        # by patch-torchrun on torch 2.13 (test_torchrun_patch.py)
        "taskd": Path(build_fixtures.build_taskd(str(tmp / "wheels"), compat=True)),
        "mindio_ttp": Path(build_fixtures.build_mindio_ttp(str(tmp / "wheels"))),
    }
    text = profile_text(name="cpu-image", taskd=True, wheels={k: Path("wheels") / v.name for k, v in wheels.items()})
    text = text.replace("    image:\n", "    image:\n      base: %s\n" % BASE)
    profile = write(tmp / "profile.yaml", text)
    return prepare_context(load_plan(str(profile)), None, str(tmp / "ctx"))


@pytest.fixture(scope="module")
def image(images: Images, poisoned: str, context: ImageContext) -> str:
    tag = images.tag("runtime")
    images.build(context, tag, poisoned)
    return tag


def test_recipe_result(images: Images, image: str) -> None:
    out = images.sh(
        image,
        "command -v resumable; id -u HwHiAiUser; id -g HwHiAiUser; grep -cx '%s' %s; "
        "python -c 'import taskd, mindio_ttp as m; "
        'print(taskd.__version__, taskd.FIXTURE, m.FIXTURE, hasattr(taskd, "DECOY"))\'; '
        "echo $RESUMABLE_PROFILE $RESUMABLE_JOB" % (TASKD_LINE, RUN_PY),
    )
    assert out.split("\n")[:6] == [
        "/usr/local/python/bin/resumable",
        "1000",
        "1000",
        "1",
        "7.3.0 True True False",
        "/etc/resumable/profile.yaml cpu-image",
    ]
    entry = json.loads(podman("image", "inspect", "--format", "{{json .Config.Entrypoint}}", image).stdout)
    assert entry == ["resumable", "launch"]


def test_second_build_on_top_keeps_one_line(images: Images, image: str, context: ImageContext) -> None:
    again = images.tag("again")
    proc = images.build(context, again, image)
    assert "already has `%s` exactly once" % TASKD_LINE in proc.stdout + proc.stderr
    assert images.sh(again, "grep -cx '%s' %s" % (TASKD_LINE, RUN_PY)).strip() == "1"


def test_dry_run_inside(images: Images, image: str, context: ImageContext, tmp_path: Path) -> None:
    env = [
        "-e",
        "RANK=0",
        "-e",
        "POD_IP=10.0.0.5",
        "-e",
        "MASTER_ADDR=10.96.0.1",
        "-e",
        "MASTER_PORT=2222",
        "-e",
        "MINDX_TASK_ID=uid-1",
    ]
    out = podman("run", "--rm", "--network=none", *env, image, "--dry-run").stdout
    lib = "/usr/local/python/lib/python3.11/site-packages/taskd/python/cython_api/libs/libtaskd.so"
    assert "export LD_PRELOAD=%s" % lib in out
    assert "-m resumable.runtime.taskd_manager" in out
    assert "--monitor_interval=1" in out and "--max_restarts=3" in out and "--master_addr=10.0.0.5" in out
    # the image's job has one node: a rank 1 is a mistake the dry run refuses, naming RANK (issue 25)
    refused = podman("run", "--rm", "--network=none", *env, "-e", "RANK=1", image, "--dry-run", check=False)
    assert refused.returncode == 2 and "RANK=1 is outside 0..0" in refused.stdout + refused.stderr
    # the same job on two nodes (its profile mounted over the image's): rank 1 runs no TaskD Manager
    two = tmp_path / "two-nodes"
    two.mkdir()
    baked = Path(context.path) / PROFILE_NAME
    write(two / "profile.yaml", baked.read_text().replace("nodes: 1\n", "nodes: 2\n", 1))
    mount = ["-v", "%s:/etc/resumable-two:ro" % two, "-e", "RESUMABLE_PROFILE=/etc/resumable-two/profile.yaml"]
    rank1 = podman("run", "--rm", "--network=none", *env, "-e", "RANK=1", *mount, image, "--dry-run").stdout
    assert "RANK=1" in rank1 and "taskd_manager" not in rank1


def test_doctor_inside(images: Images, image: str) -> None:
    proc = podman(
        "run", "--rm", "--network=none", "--entrypoint", "resumable", image, "doctor", "--format", "json", check=False
    )
    data = json.loads(proc.stdout)
    got: Dict[str, str] = {c["name"]: c["status"] for c in data["checks"]}
    for name in (
        "python",
        "torch",
        "launcher",
        "taskd",
        "mindio_ttp",
        "run.py patch",
        "libtaskd.so",
        "user HwHiAiUser",
    ):
        assert got[name] == "ok", (name, data)
    # no NPU software in this base: reported, and the profile names no versions for them
    assert got["torch_npu"] == "warn" and got["CANN"] == "warn"
    assert proc.returncode == 0 and data["ok"] is True


def test_training_through_the_entrypoint(images: Images, image: str, tmp_path: Path) -> None:
    work = tmp_path / "job"
    work.mkdir()
    env = {
        "RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29600",
        "POD_IP": "127.0.0.1",
        "MINDX_TASK_ID": "img-uid",
        "RESUMABLE_FIXTURE_LOG": "/job/calls.jsonl",
    }
    args = ["run", "--rm", "--network=none", "-v", "%s:/fixtures:ro" % FIXTURES, "-v", "%s:/job" % work]
    for key, value in env.items():
        args += ["-e", "%s=%s" % (key, value)]
    proc = podman(
        *args,
        image,
        "--log-dir",
        "/job/logs",
        "--",
        "/fixtures/train_ckpt.py",
        "--ckpt",
        "/job/ckpt",
        "--progress",
        "/job/progress.jsonl",
        "--steps",
        "6",
        "--every",
        "3",
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    progress = [json.loads(line) for line in (work / "progress.jsonl").read_text().splitlines()]
    assert progress[-1]["event"] == "done" and progress[-1]["step"] == 6
    calls = [json.loads(line) for line in (work / "calls.jsonl").read_text().splitlines()]
    assert [c["call"] for c in calls].count("init_taskd_manager") == 1
    assert any(c["call"] == "patch" for c in calls) and any(c["call"] == "preload" for c in calls)
    (timeline,) = (work / "logs").glob("timeline-*.jsonl")
    kinds = [json.loads(line)["event"] for line in timeline.read_text().splitlines()]
    assert kinds.count("worker-start") == 2 and kinds[-1] == "exit"


def test_a_tampered_wheel_fails_the_build(images: Images, context: ImageContext, tmp_path: Path) -> None:
    ctx = tmp_path / "ctx"
    shutil.copytree(context.path, str(ctx))
    wheel = ctx / "wheels" / context.wheels[0]
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    copy = ImageContext(str(ctx), str(ctx / "Dockerfile"), context.build_args, context.wheels)
    proc = images.build(copy, images.tag("tampered"), BASE, check=False)
    assert proc.returncode != 0
    assert "%s: FAILED" % context.wheels[0] in proc.stdout + proc.stderr


def test_a_base_that_gives_uid_1000_to_another_account_fails(
    images: Images, context: ImageContext, tmp_path: Path
) -> None:
    write(tmp_path / "Containerfile", "FROM %s\nRUN useradd -u 1000 -m ubuntu\n" % BASE)
    clash = images.tag("clash")
    podman("build", "--network=none", "--layers=false", "-t", clash, str(tmp_path))
    proc = images.build(context, images.tag("clash-runtime"), clash, check=False)
    assert proc.returncode != 0
    assert "uid 1000 belongs to 'ubuntu' in the base image" in proc.stdout + proc.stderr
