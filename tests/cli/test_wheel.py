"""The distribution works from its wheel alone.

A copy of the checkout (the files git knows, links kept as links) is built into a wheel with
``pip wheel`` the way a user's ``pip install .`` builds it (isolated build, setuptools from the
index), the wheel is installed alone into a fresh virtualenv (no ``-e``, PyYAML its only
dependency), and the CLI of that venv runs ``validate``, ``plan``, ``render``, ``image context`` and
``launch --dry-run`` from a temporary directory with nothing of the repository on ``sys.path``.
Files the package reads at run time (the image recipe, the start-up hook) must come from the
installed package.
"""

from __future__ import annotations

import email
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional

import pytest
from conftest import EXAMPLES, ROOT

import resumable
from resumable.api import load_plan
from resumable.errors import ResumableError
from resumable.image import context

DOCKERFILE = ROOT / "images" / "runtime" / "Dockerfile"
#: what a copy without git leaves out (build output, virtualenvs, caches)
NOT_SOURCE = {".git", "out", "build", "dist", "collections", "__pycache__", ".mypy_cache", ".ruff_cache"}


class Installed(NamedTuple):
    wheel: Path
    venv: Path
    work: Path
    env: Dict[str, str]


def _source_files() -> List[str]:
    """Paths (relative to ROOT) a fresh clone has, plus new files not ignored."""
    if shutil.which("git") and (ROOT / ".git").exists():
        done = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        )
        return [p for p in done.stdout.decode().split("\0") if p and os.path.lexists(ROOT / p)]
    found = []
    for top, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE and not d.startswith(".venv") and not d.endswith(".egg-info")]
        found += [os.path.relpath(os.path.join(top, n), ROOT) for n in names]
    return found


def _copy_checkout(dst: Path) -> None:
    for rel in _source_files():
        src, out = ROOT / rel, dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        else:
            shutil.copy2(src, out)


def _clean_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("RESUMABLE_PROFILE", None)
    env.pop("RESUMABLE_JOB", None)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    src, dist, venv, work = base / "src", base / "dist", base / "venv", base / "work"
    _copy_checkout(src)
    work.mkdir()
    env = _clean_env()
    pip = ["-m", "pip", "--disable-pip-version-check"]
    subprocess.run(
        [sys.executable, *pip, "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
        cwd=work,
        env=env,
        check=True,
        timeout=600,
    )
    (wheel,) = dist.glob("*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], cwd=work, env=env, check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), *pip, "install", "-q", str(wheel)], cwd=work, env=env, check=True)
    # the source copy is gone: nothing can be read from a checkout any more
    shutil.rmtree(src)
    yield Installed(wheel, venv, work, env)


def run(inst: Installed, *args: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(inst.venv / "bin" / "resumable"), *args],
        cwd=inst.work,
        env=env or inst.env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _site_packages(inst: Installed) -> Path:
    (site,) = (inst.venv / "lib").glob("python3*/site-packages")
    return site


def test_the_wheel_holds_the_files_read_at_run_time(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
        assert z.read("resumable/image/Dockerfile") == DOCKERFILE.read_bytes()
        assert "resumable/runtime/startup/sitecustomize.py" in names
        assert "resumable/py.typed" in names
        (meta_name,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_string(z.read(meta_name).decode())
        (license_name,) = (n for n in names if re.search(r"\.dist-info/(licenses/)?LICENSE$", n))
        assert z.read(license_name) == (ROOT / "LICENSE").read_bytes()
    assert meta["Name"] == "ascend-resumable"
    assert meta["Version"] == resumable.__version__
    assert "License :: OSI Approved :: Apache Software License" in meta.get_all("Classifier", [])
    assert any(url.startswith("Source, ") for url in meta.get_all("Project-URL", []))
    # PyYAML is the only requirement; the extra [pulumi] adds the Pulumi components' own (issue 15)
    assert [r for r in meta.get_all("Requires-Dist", []) if "extra ==" not in r] == ["PyYAML>=5.1"]
    # the test suite and the image sources stay out (resumable_pulumi/, the components, is in: issue 15)
    assert not any(n.startswith(("tests/", "images/", "ansible_collections/", "roles/", "examples/")) for n in names)


def test_the_wheel_carries_the_pulumi_components(installed: Installed) -> None:
    """The components under their own package name, for a Pulumi program of the user's own (issue 15)."""
    with zipfile.ZipFile(installed.wheel) as z:
        names = set(z.namelist())
        (meta_name,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_string(z.read(meta_name).decode())
    modules = {p.name for p in (ROOT / "resumable_pulumi").glob("*.py")}
    assert {f"resumable_pulumi/{n}" for n in modules} | {"resumable_pulumi/py.typed"} <= names
    assert "pulumi" in meta.get_all("Provides-Extra", [])
    assert 'pulumi-kubernetes<4.29,>=4.25; python_version >= "3.10" and extra == "pulumi"' in meta.get_all(
        "Requires-Dist", []
    )


def test_the_venv_imports_the_installed_package_only(installed: Installed) -> None:
    done = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import json, sys, resumable; print(json.dumps(sys.path))"],
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert not any(str(ROOT) in p for p in json.loads(done.stdout))
    freeze = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    )
    names = {d["name"].lower() for d in json.loads(freeze.stdout)}
    assert {"ascend-resumable", "pyyaml"} <= names
    assert not names & {"pulumi", "torch", "jsonschema", "pytest"}
    version = run(installed, "--version")
    assert version.stdout.strip() == "resumable " + resumable.__version__


def _profile(work: Path) -> Path:
    """examples/pytorch-process-recovery.yaml with a base image and vendor wheel files of its own."""
    text = (EXAMPLES / "pytorch-process-recovery.yaml").read_text()
    # the example names an example registry's base image (issue 15): a local one here
    text = re.sub(r"(?m)^      base: .*$", "      base: localhost/base:1", text, count=1)
    (work / "wheels").mkdir(exist_ok=True)
    for name in ("taskd-7.3.0-py3-none-linux_aarch64.whl", "mindio_ttp-7.3.0-py3-none-linux_aarch64.whl"):
        data = ("stand-in for %s\n" % name).encode()
        (work / "wheels" / name).write_bytes(data)
        text, n = re.subn(
            r'(file: wheels/%s\n\s+sha256: )"0+"' % re.escape(name),
            r'\g<1>"%s"' % hashlib.sha256(data).hexdigest(),
            text,
        )
        assert n == 1, name
    path = work / "profile.yaml"
    path.write_text(text)
    return path


def test_validate_plan_render_from_the_wheel(installed: Installed) -> None:
    examples = installed.work / "examples"
    shutil.copytree(EXAMPLES, examples)
    done = run(installed, "validate", *sorted(str(p) for p in examples.glob("*.yaml")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("OK ") == len(list(examples.glob("*.yaml")))
    profile = _profile(installed.work)
    plan = run(installed, "plan", str(profile), "--format", "json")
    assert plan.returncode == 0, plan.stderr
    assert [j["name"] for j in json.loads(plan.stdout)["jobs"]] == ["llama-pretrain"]
    rendered = installed.work / "rendered"
    done = run(installed, "render", str(profile), "--out", str(rendered))
    assert done.returncode == 0, done.stderr
    kinds = {p.name.split("-")[1] for p in rendered.rglob("*.yaml")}
    assert {"ascendjob", "customresourcedefinition", "deployment", "daemonset"} <= kinds


def test_image_context_from_the_wheel(installed: Installed) -> None:
    profile = _profile(installed.work)
    ctx = installed.work / "ctx"
    done = run(installed, "image", "context", str(profile), "--out", str(ctx))
    assert done.returncode == 0, done.stderr
    assert (ctx / "Dockerfile").read_bytes() == DOCKERFILE.read_bytes()
    (own,) = (ctx / "resumable").glob("ascend_resumable-%s-*.whl" % resumable.__version__)
    with zipfile.ZipFile(own) as z:
        assert z.read("resumable/image/Dockerfile") == DOCKERFILE.read_bytes()
    assert "podman build --platform linux/arm64 -f %s" % (ctx / "Dockerfile") in done.stdout


def test_launch_dry_run_from_the_wheel(installed: Installed) -> None:
    # what the base image and the Ascend Operator provide on a pod: torchrun on PATH, the pod's rank
    framework = installed.work / "framework-bin"
    framework.mkdir()
    (framework / "torchrun").write_text("#!/bin/sh\nexit 1\n")
    (framework / "torchrun").chmod(0o755)
    env = dict(installed.env, RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", MINDX_TASK_ID="t1")
    env["PATH"] = "%s%s%s" % (framework, os.pathsep, env.get("PATH", ""))
    profile = EXAMPLES / "job-level-minimal.yaml"
    local = installed.work / "job-level-minimal.yaml"
    local.write_bytes(profile.read_bytes())
    logs = installed.work / "logs"
    done = run(installed, "launch", "--profile", str(local), "--log-dir", str(logs), "--dry-run", "--", "t.py", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    (hook,) = re.findall(r"^export PYTHONPATH=(\S+)", done.stdout, re.M)
    assert Path(hook) == _site_packages(installed) / "resumable" / "runtime" / "startup"
    assert (Path(hook) / "sitecustomize.py").is_file()
    assert not logs.exists()  # a dry run starts nothing and writes nothing


def test_a_package_without_its_recipe_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context, "DOCKERFILE", str(tmp_path / "gone" / "Dockerfile"))
    with pytest.raises(ResumableError) as caught:
        context.prepare_context(load_plan(str(_profile(tmp_path))), None, str(tmp_path / "ctx"))
    message = str(caught.value)
    assert "package data of the ascend-resumable distribution" in message
    assert "pip install --force-reinstall ascend-resumable" in message
    assert not (tmp_path / "ctx").exists()
