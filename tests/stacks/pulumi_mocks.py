"""One Pulumi mock runtime for every Pulumi test module (set once, before ``resumable_pulumi`` is
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pulumi
import yaml
from conftest import ROOT, example_profile
from pulumi.runtime.mocks import MockMonitor

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
        #: outputs of other stacks by name, for StackReference
        self.stack_outputs: Dict[str, Dict[str, Any]] = {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> Any:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            # the engine reads the referenced stack's outputs (tests put them in stack_outputs)
            return [args.name, {"name": args.name, "outputs": self.stack_outputs.get(args.name, {})}]
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
    MOCKS.stack_outputs.clear()
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


def project() -> Dict[str, Any]:
    doc: Dict[str, Any] = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))
    return doc


def program_config(config: Dict[str, Any]) -> Dict[str, str]:
    """``config`` (keys with or without the project prefix, as a Pulumi.<stack>.yaml holds them) as
    the engine hands it to the program: full keys, strings as they are, other values as JSON. The
    CLI's own merge with Pulumi.yaml and its type checks run for real in tests/cluster (the program
    needs neither: a key it does not find takes the default Pulumi.yaml declares)."""
    out: Dict[str, str] = {}
    for key, value in config.items():
        full = key if ":" in key else f"{PROJECT}:{key}"
        out[full] = value if isinstance(value, str) else json.dumps(value)
    return out


def run_program(config: Dict[str, Any], secret_keys: Optional[List[str]] = None) -> Dict[str, Any]:
    """Run __main__.py under the mocks on ``config``; the keys in ``secret_keys`` are secrets, as
    ``pulumi config set --secret`` makes them."""
    secrets = [k if ":" in k else f"{PROJECT}:{k}" for k in (secret_keys or [])]
    pulumi.runtime.set_all_config(program_config(config), secrets)
    try:
        return runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    finally:
        pulumi.runtime.set_all_config({})


class FakeNodes:
    """The API server's answer to "which nodes carry these labels" (resumable_pulumi/readiness.py):
    ``labelled`` holds the label=value pairs present on at least one node (all on one node)."""

    def __init__(
        self, labelled: Optional[Dict[str, str]] = None, fail: Optional[Exception] = None, nodes: int = 1
    ) -> None:
        self.labelled = labelled
        self.fail = fail
        #: how many nodes carry the labels asked for
        self.nodes = nodes
        self.asked: List[str] = []

    def counter(self, kubeconfig: Optional[str], context: Optional[str]) -> Callable[[str], int]:
        if self.fail is not None:
            raise self.fail

        def count(selector: str) -> int:
            self.asked.append(selector)
            if self.labelled is None:
                return self.nodes
            wanted = dict(pair.split("=", 1) for pair in selector.split(","))
            return self.nodes if all(self.labelled.get(k) == v for k, v in wanted.items()) else 0

        return count


def install_program(monkeypatch: Any, tmp_path: Path, nodes: Optional[FakeNodes] = None) -> FakeNodes:
    """Run the program from the project directory (as Pulumi does) with the real build-context code
    writing under ``tmp_path`` and the node check answered by ``nodes`` (default: every label is on
    some node), never by a real cluster."""
    import resumable_pulumi.image
    import resumable_pulumi.readiness

    nodes = nodes or FakeNodes()
    monkeypatch.setattr(resumable_pulumi.readiness, "cluster_node_counter", nodes.counter)
    monkeypatch.setattr(resumable_pulumi.image, "CONTEXT_DIR", str(tmp_path / "image-context"))
    monkeypatch.chdir(ROOT)
    return nodes


def shipped_config(name: str, tmp_path: Path) -> Dict[str, Any]:
    """Pulumi.<name>.yaml as shipped, its profile the example with the wheel files in place."""
    config = stack_config(ROOT / f"Pulumi.{name}.yaml")
    profile = config.get(f"{PROJECT}:profile", "")
    if profile.startswith("examples/"):
        config[f"{PROJECT}:profile"] = str(example_profile(Path(profile).stem, tmp_path))
    return config
