"""Fixtures of the cluster tests: the real control plane (tools/controlplane.py, with the Ascend
Operator and Volcano run by tools/podrunner.py) and the real Pulumi CLI with its Kubernetes provider
and Python language host (plain ``pulumi up``), all built by ``make tools``. A pytest plugin
(tests/conftest.py ``pytest_plugins``), so every test directory has them: ``start_plane`` and
``kube_cluster`` (a fresh control plane for tests/manifests/test_render_apiserver.py's contract).

``make test`` builds the tools before pytest runs; when they are missing these tests fail and say
how to build them (a skip would hide that the deployment layer went untested).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES, ROOT, example_profile

sys.path.insert(0, str(ROOT / "tools"))
import controlplane as controlplane  # re-exported for the test modules
import go_tools as go_tools  # re-exported for the test modules
import podrunner as podrunner  # re-exported for the test modules
import source_tools as source_tools  # re-exported for the test modules

Plane = controlplane.ControlPlane
PROJECT = "ascend-resumable"
StartPlane = Callable[..., Plane]


def built(names: Sequence[str]) -> List[Path]:
    """The bin directories of the tools ``names`` (wrapper modules or source builds); the test fails,
    naming what is missing and how to build it, when one is not built."""
    tools = go_tools.all_tools()
    try:
        return go_tools.bin_dirs([tools[n] for n in names])
    except go_tools.ToolError as exc:
        pytest.fail(f"{exc} (make test builds them first)", pytrace=False)


#: what plain `pulumi` needs on PATH: the CLI, the Kubernetes provider and the Python language host
PULUMI_TOOLS = ("pulumi", "pulumi-kubernetes", f"pulumi-language-python-{source_tools.LANGUAGE_HOST_VERSION}")
#: the CLI must neither ask the network for a newer version nor download a plugin
PULUMI_OFFLINE = {
    "PULUMI_SKIP_UPDATE_CHECK": "true",
    "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    "PULUMI_SKIP_CONFIRMATIONS": "true",
}


@pytest.fixture
def start_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartPlane]:
    """Start control planes (each in its own directory; ``mindcluster``: the pod runner also runs the
    NPU plugin, ClusterD and the device plugin's double, tools/podrunner.py); every one is stopped
    when the test ends, passed or failed."""
    built(("kubernetes", "etcd", "kwok"))
    planes: List[Plane] = []

    def start(nodes: Sequence[controlplane.FakeNode] = (), mindcluster: bool = False) -> Plane:
        plane = Plane(tmp_path_factory.mktemp("plane"), mindcluster=mindcluster)
        planes.append(plane)
        plane.start(nodes)
        return plane

    yield start
    for plane in planes:
        plane.stop()


@pytest.fixture(scope="module")
def module_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """One control plane for every test of a module, started without nodes: each test adds nodes
    (and namespaces) of its own names, so the tests share the plane without seeing each other's
    objects. Stopped when the module's last test ends, passed or failed."""
    built(("kubernetes", "etcd", "kwok"))
    plane = Plane(tmp_path_factory.mktemp("plane"))
    plane.start()  # stops what it started when it fails
    try:
        yield plane
    finally:
        plane.stop()


@dataclass
class KubeCluster:
    """What tests/manifests/test_render_apiserver.py asks of a cluster: kubectl and its kubeconfig.
    ``runs_pods``: KWOK's pod-complete stage finishes the pods of a Job (kwok v0.8.0
    kustomize/stage/pod/fast/pod-complete.yaml selects pods owned by a Job), so a Job completes."""

    kubectl: str
    kubeconfig: str
    plane: Plane
    runs_pods: bool = True


@pytest.fixture
def kube_cluster(start_plane: StartPlane) -> KubeCluster:
    """A fresh control plane with the example's fake nodes (a management node, two NPU nodes)."""
    plane = start_plane(plan_nodes(EXAMPLES / "pytorch-process-recovery.yaml"))
    return KubeCluster(str(plane.bins["kubectl"]), str(plane.kubeconfig), plane)


def plan_nodes(profile: Path, compute: Optional[int] = None) -> List[controlplane.FakeNode]:
    return controlplane.nodes_from_plan(controlplane.plan_json(profile), compute)


class Project:
    """A copy of this Pulumi project as a user has it (Pulumi.yaml, __main__.py, requirements.txt, the
    shipped stack files, the example profiles with their wheel files in place) with a file state
    backend and a passphrase, run by plain ``pulumi`` against ``plane`` (None: no cluster, for what
    the CLI refuses before the program runs). Its ``.venv`` (Pulumi.yaml: ``toolchain: pip``,
    ``virtualenv: .venv``) links to the test virtualenv, which holds requirements.txt installed as
    Pulumi's pip toolchain installs it (tests/stacks/test_pulumi_venv.py has Pulumi make one itself)."""

    def __init__(self, directory: Path, plane: Optional[Plane]) -> None:
        self.dir = directory
        self.plane = plane
        self.state = directory.parent / f"{directory.name}-state"
        self.state.mkdir(exist_ok=True)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ("Pulumi.yaml", "__main__.py", "requirements.txt"):
            shutil.copyfile(ROOT / name, directory / name)
        if not (directory / ".venv").exists():
            (directory / ".venv").symlink_to(Path(sys.prefix))
        for stack in ROOT.glob("Pulumi.*.yaml"):
            shutil.copyfile(stack, directory / stack.name)
        for example in EXAMPLE_FILES:
            example_profile(example.stem, directory)  # writes profiles/<name>.yaml and its wheels

    @property
    def cluster(self) -> Plane:
        assert self.plane is not None, "this project has no control plane"
        return self.plane

    def env(self) -> Dict[str, str]:
        env = self.plane.env() if self.plane is not None else dict(os.environ, KUBECONFIG=str(self.dir / "none"))
        env.update(
            PULUMI_BACKEND_URL=f"file://{self.state}",
            PULUMI_CONFIG_PASSPHRASE="cluster-tests",
            PULUMI_HOME=str(self.state / ".pulumi-home"),
            **PULUMI_OFFLINE,
        )
        env.pop("VIRTUAL_ENV", None)  # Pulumi's pip toolchain runs the project's own .venv
        env["PATH"] = os.pathsep.join([*map(str, built(PULUMI_TOOLS)), env["PATH"]])
        return env

    def stack_file(self, stack: str) -> Path:
        return self.dir / f"Pulumi.{stack}.yaml"

    def configure(self, stack: str, **values: Any) -> None:
        """Set config keys of ``stack`` (project keys without the prefix), the profile pointing at
        the copy with its wheel files."""
        path = self.stack_file(stack)
        doc = yaml.safe_load(path.read_text()) if path.exists() else {}
        config = dict((doc or {}).get("config") or {})
        profile = config.get(f"{PROJECT}:profile", "")
        if profile.startswith("examples/"):
            config[f"{PROJECT}:profile"] = "profiles/" + Path(profile).name
        for key, value in values.items():
            config[key if ":" in key else f"{PROJECT}:{key}"] = value
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))

    def pulumi(self, command: str, stack: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``pulumi <command> --stack <stack>`` as a user runs it (``up``, ``refresh`` and ``destroy``
        with ``--yes``: previewed, then applied), the stack selected or created first; ``output`` is
        ``pulumi stack output --json``."""
        if not (self.state / ".pulumi" / "stacks" / PROJECT / f"{stack}.json").exists():
            self.cli("stack", "select", "--create", stack)
        if command == "output":
            argv = ["stack", "output", "--stack", stack, "--json", *args]
        else:
            argv = [command, "--stack", stack, "--non-interactive", *args]
            if command in ("up", "refresh", "destroy"):
                argv.append("--yes")
            if command == "preview":
                argv.append("--diff")
        done = subprocess.run(
            ["pulumi", *argv], cwd=self.dir, capture_output=True, text=True, env=self.env(), timeout=900, check=False
        )
        if check and done.returncode != 0:
            pytest.fail(
                f"pulumi {command} {stack} exited {done.returncode}:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
            )
        return done

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real Pulumi CLI for what needs no program (stack, config, export)."""
        done = subprocess.run(
            ["pulumi", *args], cwd=self.dir, capture_output=True, text=True, env=self.env(), timeout=300
        )
        assert done.returncode == 0, f"pulumi {' '.join(args)}: {done.stdout}{done.stderr}"
        return done

    def kubernetes_inputs(self, stack: str) -> List[Dict[str, Any]]:
        """What the engine sent for every Kubernetes object of ``stack`` (``pulumi stack export``)."""
        state = json.loads(self.cli("stack", "export", "--stack", stack).stdout)
        resources = state["deployment"].get("resources") or []
        return [r["inputs"] for r in resources if r["type"].startswith("kubernetes:") and "kind" in r.get("inputs", {})]

    def outputs(self, stack: str) -> Dict[str, str]:
        """The stack's outputs, each as its JSON text (a secret: ``"[secret]"``)."""
        values = json.loads(self.pulumi("output", stack).stdout or "{}")
        return {key: json.dumps(value, sort_keys=True) for key, value in values.items()}
