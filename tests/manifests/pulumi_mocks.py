"""One Pulumi mock runtime for every Pulumi test module (set once, before ``components`` is
imported).

The monitor records every RegisterResource request as the engine would receive it (parent,
dependencies, provider reference, retainOnDelete, aliases, custom timeouts, deleteBeforeReplace),
so the tests check the wiring itself rather than the options the components say they passed.
The mocks emulate what the providers return: a Kubernetes object echoes its inputs; a
pulumi-docker-build Image gets a ``digest`` and a ``ref`` equal to its first tag with that digest,
which is that provider's documented contract for ``ref``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import runpy
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pulumi
import yaml
from pulumi.runtime.mocks import MockMonitor

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROJECT = "ascend-resumable"
SECRET_SIG = "4dabf18193072939515e22adb298388d"  # pulumi's marker of a secret value in inputs


def pulumi_test(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``pulumi.runtime.test`` (untyped in the SDK) with a type, so the tests stay checked."""
    decorate: Callable[[Callable[..., Any]], Callable[..., Any]] = pulumi.runtime.test
    return decorate(fn)


def image_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


class Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: List[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.typ == "docker-build:index:Image":
            digest = image_digest(args.name)
            outputs["digest"] = digest
            tags = outputs.get("tags") or []
            outputs["ref"] = f"{tags[0]}@{digest}" if tags else ""
        return [f"{args.name}_id", outputs]

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}

    def kubernetes(self) -> List[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ.startswith("kubernetes:") and not r.typ.startswith("pulumi:")]


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.requests: Dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        self.requests[response.urn] = request
        return response


MOCKS = Mocks()
MONITOR = RecordingMonitor(MOCKS)
pulumi.runtime.set_mocks(MOCKS, project=PROJECT, stack="test", preview=False, monitor=MONITOR)


def settle_leftovers(timeout: float = 10.0) -> None:
    """Let work a previous test left on the shared event loop finish (or cancel it).

    ``pulumi.runtime.test`` forgets outstanding RPCs at its start but cannot stop them: a program
    that failed on purpose (bad config, an invalid profile) leaves registrations in flight on the
    executor, and they would land in the next test's records once its loop runs.
    """
    try:
        loop = asyncio.get_event_loop()  # the loop pulumi's _sync_await runs (one per thread)
    except RuntimeError:
        return  # no loop yet: nothing left over
    if loop.is_running():
        return
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not pending:
        return
    _, stuck = loop.run_until_complete(asyncio.wait(pending, timeout=timeout))
    for task in stuck:
        task.cancel()
    if stuck:
        loop.run_until_complete(asyncio.wait(stuck, timeout=timeout))


def reset() -> None:
    settle_leftovers()
    MOCKS.resources.clear()
    MONITOR.requests.clear()


@dataclass
class Registered:
    """One registered resource: its URN, the request the engine got and the inputs."""

    urn: str
    request: Any
    inputs: Dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.request.type)

    @property
    def key(self) -> str:
        """``Kind/namespace/name`` of a Kubernetes object."""
        meta = self.inputs.get("metadata") or {}
        ns = meta.get("namespace")
        return f"{self.inputs['kind']}/{ns}/{meta['name']}" if ns else f"{self.inputs['kind']}/{meta['name']}"


def integral(value: Any) -> Any:
    """Inputs as the provider reads them: the mock monitor carries every number as a protobuf
    double, so ``replicas: 1`` arrives as 1.0; whole numbers are ints again."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def registered() -> List[Registered]:
    inputs = {(r.typ, r.name): integral(dict(r.inputs)) for r in MOCKS.resources}
    out = []
    for urn, req in MONITOR.requests.items():
        out.append(Registered(urn, req, inputs.get((req.type, req.name), {})))
    return out


def kubernetes_objects() -> List[Registered]:
    return [r for r in registered() if r.type.startswith("kubernetes:") and "providers" not in r.type]


def by_key() -> Dict[str, Registered]:
    return {r.key: r for r in kubernetes_objects()}


def settled(resources: List[pulumi.Resource], check: Callable[[Any], None]) -> Any:
    """Run ``check`` once the resources have been registered with the mocks."""
    return pulumi.Output.all(*[r.urn for r in resources]).apply(check)


# --- the program ---------------------------------------------------------------------------------


def stack_files() -> List[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml"))


def stack_config(path: Path) -> Dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(doc.get("config") or {})


def project_defaults() -> Dict[str, Any]:
    """Non-project config values Pulumi.yaml sets (pulumi:disable-default-providers)."""
    doc = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))
    return {k: v["value"] for k, v in doc["config"].items() if isinstance(v, dict) and "value" in v}


def run_program(config: Dict[str, Any], secret_keys: Optional[List[str]] = None) -> Dict[str, Any]:
    """Run __main__.py under the mocks with ``config`` (keys with or without the project prefix)."""
    values = {}
    for key, value in {**project_defaults(), **config}.items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        values[full] = value if isinstance(value, str) else json.dumps(value)
    secrets = [k if ":" in k else f"{PROJECT}:{k}" for k in (secret_keys or [])]
    pulumi.runtime.set_all_config(values, secrets)
    try:
        return runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})


@dataclass
class StubContext:
    path: str
    dockerfile: str
    build_args: Dict[str, str]
    wheels: List[str]


def stub_prepare_context(plan: Any, job_name: str, out_dir: str) -> StubContext:
    """A stand-in for ``resumable.runtime.context.prepare_context`` honouring its contract (a
    directory holding the Dockerfile, BASE_IMAGE among the build args, the wheel file names); the
    real one is tested where it is written."""
    job = next(j for j in plan.jobs if j.name == job_name)
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    (path / "Dockerfile").write_text("ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n", encoding="utf-8")
    return StubContext(
        path=str(path),
        dockerfile="Dockerfile",
        build_args={"BASE_IMAGE": job.image.base or "ubuntu:22.04"},
        wheels=[Path(w.file).name for w in job.image.wheels if w.file],
    )


class FakeNodes:
    """The API server's answer to "which nodes carry these labels" (components/readiness.py):
    ``labelled`` holds the label=value pairs present on at least one node (all on one node)."""

    def __init__(self, labelled: Optional[Dict[str, str]] = None, fail: Optional[Exception] = None) -> None:
        self.labelled = labelled
        self.fail = fail
        self.asked: List[str] = []

    def counter(self, kubeconfig: Optional[str], context: Optional[str]) -> Callable[[str], int]:
        if self.fail is not None:
            raise self.fail

        def count(selector: str) -> int:
            self.asked.append(selector)
            if self.labelled is None:
                return 1
            wanted = dict(pair.split("=", 1) for pair in selector.split(","))
            return 1 if all(self.labelled.get(k) == v for k, v in wanted.items()) else 0

        return count


def install_stub_context(monkeypatch: Any, tmp_path: Path, nodes: Optional[FakeNodes] = None) -> FakeNodes:
    """Run the program from the project directory (as Pulumi does) with image build contexts
    prepared by :func:`stub_prepare_context` under ``tmp_path`` and the node check answered by
    ``nodes`` (default: every label is on some node), never by a real cluster."""
    import components.readiness

    nodes = nodes or FakeNodes()
    monkeypatch.setattr(components.readiness, "cluster_node_counter", nodes.counter)

    def prepare(plan: Any, job_name: str, out_dir: str) -> StubContext:
        return stub_prepare_context(plan, job_name, str(tmp_path / out_dir))

    module = types.ModuleType("resumable.runtime.context")
    module.prepare_context = prepare  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "resumable.runtime.context", module)
    monkeypatch.chdir(ROOT)
    return nodes
