"""Generated: every profile ``resumable validate`` accepts, the real API server accepts (issue 35).

Hypothesis (seeded, a fixed number of examples, no shrinking) edits one or two string fields of a
shipped example: any string-typed field of the profile schema (read from the dataclasses, so a new
field is mutated without a change here), a mapping key or value, a list item, with values near the
rules (63 and 64 characters, upper case, dots, a trailing '-', '..', a prefix with two slashes) and
far from them (spaces, shell syntax, non-ASCII, control and bidirectional characters). Each edited
profile goes through the gate (:func:`resumable.api.load_plan_text`); every one it accepts is
rendered as ``resumable render`` renders it, and every object goes to a real kube-apiserver with
``kubectl apply --dry-run=server`` (the CRDs of the profile's release applied first, for real; the
namespaces and the PriorityClasses the pods name created for real). The pod templates of the
AscendJob and the Volcano Job are sent as the pods the Ascend Operator and Volcano create from them,
since the API server checks a custom resource against its CRD's schema only, and so is the Service
the Ascend Operator creates for an AscendJob (:func:`resumable.manifests.accepted.operator_objects`).
The Pulumi program's objects are compared with the render for a few of the accepted profiles of the ``all`` stacks, and
what it registers differently (the image it runs) is sent as well.

Objects are sent in one ``kubectl apply`` per CRD set, each object once however many profiles share
it; a refusal fails the test naming the edited fields, their values and the API server's message.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import hashlib
import json
import re
import subprocess
import time
import typing
from pathlib import Path
from typing import Any, Counter, Dict, List, Sequence, Tuple

import pytest
import yaml
from conftest import EXAMPLE_FILES

from resumable import formats as F
from resumable.api import PlanError, load_plan_text
from resumable.binding import unwrap_optional
from resumable.choices import is_literal, values
from resumable.errors import ProfileError
from resumable.manifests import UnsupportedStack, build_deployment, check_supported
from resumable.manifests.accepted import operator_objects, pod_templates
from resumable.profile import STRATEGIES, JobVolume, Profile, Toleration
from resumable.rules import REGISTRY

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEED = 35
#: generated profiles per run: about 40 % pass the gate (98 of 240 with seed 35), about 360 distinct
#: objects reach the API server; the test prints its outcome counts and the seconds of each phase (-s)
EXAMPLES = 240
#: accepted profiles of the ``all`` stacks whose Pulumi objects are compared and sent too
PULUMI_CASES = 4

EXAMPLE_DOCS = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in EXAMPLE_FILES}
Path_ = Tuple[Any, ...]
KEY = object()  # a new key of a mapping
ITEM = object()  # the item of a list of strings


@dataclasses.dataclass(frozen=True)
class Slot:
    """A string place of the profile: ``path`` through mappings and list indexes, ending at a
    string field, a new mapping key (KEY) or value (its key given), or a list item (ITEM)."""

    path: Path_
    #: what a new list item of a dataclass holds when the list has none (volumes, tolerations)
    seeds: Tuple[Tuple[Path_, Any], ...] = ()
    #: the field's format (resumable.formats), or "version"
    format: str = ""

    @property
    def name(self) -> str:
        out = ""
        for part in self.path:
            if part is KEY:
                out += " (a new key)"
            elif part is ITEM:
                out += "[0]"
            elif isinstance(part, int):
                out += "[%d]" % part
            else:
                out += ("." if out else "") + str(part)
        return out


#: A valid item for a list of dataclasses the examples leave empty, so its fields can be edited.
ITEM_SEEDS: Dict[type, Dict[str, Any]] = {
    JobVolume: {"name": "code", "mount_path": "/job/code", "host_path": "/data/code"},
    Toleration: {"key": "example.com/npu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
}
#: A valid value for a mapping whose keys are edited (and a valid key for one whose values are).
MAP_VALUES = {"env": ("EXTRA_SETTING", "1"), "labels": ("team", "llm"), "annotations": ("example.com/note", "x")}


def slots(cls: type = Profile, path: Path_ = (), seeds: Tuple[Tuple[Path_, Any], ...] = ()) -> List[Slot]:
    """Every string place of the schema (jobs[0] for the list of jobs)."""
    out: List[Slot] = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, _ = unwrap_optional(hints[f.name])
        here = (*path, f.name)
        origin = typing.get_origin(tp)
        fmt = "version" if f.metadata.get("version") else (f.metadata.get("format") or "")
        if tp is str:
            out.append(Slot(here, seeds, fmt))
        elif dataclasses.is_dataclass(tp):
            out += slots(tp, here, seeds)  # type: ignore[arg-type]
        elif origin in (list, List):
            (item,) = typing.get_args(tp)
            if item is str:
                out.append(Slot((*here, ITEM), seeds, fmt))
            elif dataclasses.is_dataclass(item):
                seed_item = ITEM_SEEDS.get(item)  # type: ignore[arg-type]
                more = seeds + (((here, seed_item),) if seed_item is not None else ())
                if seed_item is not None or f.name == "jobs":
                    out += slots(item, (*here, 0), more)  # type: ignore[arg-type]
        elif origin in (dict, Dict):
            key, value = typing.get_args(tp)
            if is_literal(key) and value is str:
                out.append(Slot((*here, values(key)[0]), seeds, fmt))
            elif value is str:
                out.append(Slot((*here, KEY), seeds, f.metadata.get("key_format") or ""))
                out.append(Slot((*here, MAP_VALUES.get(f.name, ("example.com/pool", "a"))[0]), seeds, fmt))
    return out


SLOTS = slots()

#: values that pass most fields' formats, at the edges of where they land (63 and 51 characters, a
#: prefix, spaces in a path, non-ASCII, shell syntax in a word that is quoted)
VALIDISH = [
    "a",
    "x1",
    "team-a",
    "a.b",
    "a_b",
    "Team_A",
    "a" * 63,
    "b" * 51,
    "x-" * 31 + "x",
    "example.com/x",
    "x.example.com/" + "t" * 63,
    "/job/data",
    "/data/x y",
    "/data/ü",
    "chip8-node8",
    "8",
    "8Gi",
    "500m",
    "10.0.0.1",
    "nfs.example.com",
    "registry.example.com/ai/x:1",
    "default",
    "kube-system",
    "--lr=1e-4",
    "x y",
    "ü",
    "名前",
    "$(id)",
    "train.py",
    "a:b",
    "it's",
]
NEAR = [
    "a",
    "A",
    "0",
    "-a",
    "a-",
    "a_b",
    "a.b",
    "a..b",
    ".a",
    "a" * 62,
    "a" * 63,
    "a" * 64,
    "a" * 253,
    "a" * 254,
    "x-" * 40 + "x",
    "Example.com/team",
    "example.com/Team",
    "example.com/",
    "/team",
    "a/b/c",
    "example.com/" + "t" * 63,
    "example.com/" + "t" * 64,
    "/abs/path",
    "/abs/../path",
    "/abs//path",
    "/abs/",
    "rel/path",
    "..",
    ".",
    "a b",
    " a",
    "x;y",
    "$(id)",
    "`id`",
    "it's",
    'say "x"',
    "a\\b",
    "ü",
    "名前",
    "train.py",
    "--flag",
    "chip8-node8",
    "1Gi",
    "10.0.0.1",
    "registry.example.com/ai/x:1",
    "a:b",
    "a@b",
    "a=b",
    "a,b",
    "a\u202eb",
    "a\u00a0b",
    "a\tb",
    "a\nb",
    "\ufeffa",
]
HOSTILE = "aZ09-_./: @$;()`'\"\\,=+*~üß名\u202e\u00a0\t\n"


def twists(current: Any) -> List[str]:
    """Values one step from the field's own value: the ways a hand edit goes wrong."""
    text = current if isinstance(current, str) and current else "value"
    out = [
        text.upper(),
        text + "-",
        "-" + text,
        text + ".",
        text.replace("-", "_"),
        text + " ",
        text + "/x",
        (text * 64)[:64],
        (text * 254)[:254],
        (text * 52)[:52],
    ]
    return out + [text[:1] + c + text[1:] for c in HOSTILE] + [text + c for c in HOSTILE]


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def passes_format(slot: Slot, value: str) -> bool:
    """Whether ``value`` gets past the field's own format (the product's check, whichever it is):
    the values worth sending to the API server are those validate accepts."""
    if _CONTROL.search(value):
        return False
    fmt = F.FORMATS.get(slot.format)
    return fmt is None or fmt.check(value) is None


#: values a field of each format takes, so that most edited profiles pass validate and reach the API
#: server; the closed sets by field
FORMAT_VALUES: Dict[str, List[str]] = {
    "version": ["7.3.0", "26.1.0", "6.0.0", "8.5.0", "2.7.1", "2.7.1.post2", "1.9.0", "1.28", "25.0.rc1.1"],
    F.QUANTITY: ["1", "8Gi", "500m", "100Gi", "0"],
    F.SIZE: ["1", "8Gi", "100Gi", "2Ti"],
    F.CONTAINER_PATH: ["/job/data", "/job/out put", "/job/ü", "/job/x:y", "/job/a,b=c"],
    F.SERVER_PATH: ["/exports/a b", "/exports/ü", "/", "/exports/x:y/"],
    F.MODE: ["0775", "2770", "755"],
    F.IMAGE: ["registry.example.com/ai/x:1", "x", "localhost:5000/a/b@sha256:" + "a" * 64, "a" * 200 + ":v"],
    F.REGISTRY: ["registry.example.com/mindx", "localhost:5000", "r.example.com/" + "a" * 200],
    F.HOST: ["10.0.0.1", "nfs.example.com", "fd00::1", "NFS-1"],
    "script": ["train.py", "训练.py", "a+b@c=d,e:f.py", "/job/code/x.py"],
    "strategies": sorted(STRATEGIES),
    "schedule_policy": ["chip8-node8", "chip4-node8", "chip2-node16", "chip1-node2", "chip8-node16"],
    "acknowledge": sorted(r.id for r in REGISTRY.values() if r.acknowledgeable),
    "capabilities": ["IPC_LOCK", "ALL", "SYS_ADMIN", "NET_RAW"],
}


def fitting(slot: Slot) -> List[str]:
    last = [p for p in slot.path if isinstance(p, str)][-1]
    for name in ("strategies", "schedule_policy", "acknowledge"):
        if last == name:
            return FORMAT_VALUES[name]
    if last.startswith("capabilities"):
        return FORMAT_VALUES["capabilities"]
    return FORMAT_VALUES.get(slot.format, VALIDISH)


def value_strategy(slot: Slot, current: Any) -> st.SearchStrategy[str]:
    """Mostly values the field's format takes (near its edges: where validate and the API server could
    disagree), the rest anything (validate must refuse what it cannot take)."""
    candidates = [*fitting(slot), *VALIDISH, *NEAR, *twists(current)]
    taken = [v for v in candidates if passes_format(slot, v)] or fitting(slot)
    anything = st.sampled_from(candidates) | st.text(alphabet=HOSTILE, max_size=24) | st.text(max_size=12)
    return st.one_of(st.sampled_from(taken), st.sampled_from(taken), st.sampled_from(taken), anything)


VOLUME_SOURCES = ("host_path", "claim", "config_map", "secret", "empty_dir")


def _get(doc: Any, path: Path_) -> Any:
    node = doc
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or len(node) <= part:
                return None
            node = node[part]
        elif part is KEY or part is ITEM:
            return None
        else:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
    return node


def apply(doc: Dict[str, Any], slot: Slot, value: str) -> None:
    """Write ``value`` at ``slot`` of ``doc``: containers created on the way, a list of dataclasses
    seeded with a valid item, a new mapping entry or a one-item list of strings."""
    for seed_path, item in slot.seeds:
        parent = _ensure(doc, seed_path[:-1])
        if not parent.get(seed_path[-1]):
            parent[seed_path[-1]] = [copy.deepcopy(item)]
    *head, last = slot.path
    if last in VOLUME_SOURCES:  # a volume has one source: the edited one replaces the seeded one
        for other in VOLUME_SOURCES:
            _ensure(doc, tuple(head)).pop(other, None)
    if last is KEY:
        valid = MAP_VALUES.get(str(head[-1]), ("", "a"))[1]
        _ensure(doc, tuple(head))[value] = valid
    elif last is ITEM:
        _ensure(doc, tuple(head[:-1]))[head[-1]] = [value]
    else:
        _ensure(doc, tuple(head))[last] = value


def _ensure(doc: Any, path: Path_) -> Any:
    node = doc
    for part in path:
        if isinstance(part, int):
            node = node[part]
        else:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
    return node


@dataclasses.dataclass
class Case:
    example: str
    edits: List[Tuple[str, str]]
    slots: List[Tuple[Slot, str]]
    objects: List[Dict[str, Any]]

    def describe(self) -> str:
        return "%s with %s" % (self.example, "; ".join("%s = %r" % e for e in self.edits))


def generate() -> Tuple[List[Case], Counter[str]]:
    """The edited profiles the gate accepts, rendered; and what became of all of them."""
    cases: List[Case] = []
    outcomes: Counter[str] = collections.Counter()
    names = sorted(EXAMPLE_DOCS)

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        example = data.draw(st.sampled_from(names))
        doc = copy.deepcopy(EXAMPLE_DOCS[example])
        edits: List[Tuple[Slot, str]] = []
        for _ in range(data.draw(st.sampled_from([1, 1, 2]))):
            slot = data.draw(st.sampled_from(SLOTS))
            value = data.draw(value_strategy(slot, _get(doc, slot.path)))
            apply(doc, slot, value)
            edits.append((slot, value))
        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
        try:
            plan = load_plan_text(text, "generated.yaml")
        except (ProfileError, PlanError):
            outcomes["refused by validate"] += 1
            return
        try:
            check_supported(plan.scheduler)
        except UnsupportedStack:
            outcomes["valid, stack not deployable"] += 1
            return
        outcomes["accepted and rendered"] += 1
        objects = build_deployment(plan, profile_text=text).objects()
        cases.append(Case(example, [(s.name, v) for s, v in edits], edits, objects))

    collect()
    return cases, outcomes


# --- what goes to the API server -----------------------------------------------------------------------


def made_from(obj: Dict[str, Any]) -> List[Dict[str, Any]]:
    """What the Ascend Operator (an AscendJob's replicas, and its Service) or Volcano (a Volcano Job's
    tasks) creates from ``obj``: pods ``<job>-<replica>-0`` with the templates' metadata and spec."""
    if obj.get("kind") == "CustomResourceDefinition" or obj.get("apiVersion", "").startswith(("v1", "apps/")):
        return []
    if obj.get("apiVersion") == "batch/v1":
        return []
    services = operator_objects(obj)
    meta = obj["metadata"]
    pods = []
    for at, template in pod_templates(obj):
        kind = at.split(".")[2] if at.startswith("spec.replicaSpecs") else "task%s" % re.sub(r"\D", "", at)
        tmeta = dict(template.get("metadata") or {})
        tmeta.update(name="%s-%s-0" % (meta["name"], kind.lower()), namespace=meta.get("namespace"))
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": tmeta, "spec": template.get("spec") or {}})
    return services + pods


class Sent:
    """Objects to send, each once, with the cases that render it."""

    def __init__(self) -> None:
        self.objects: Dict[str, Dict[str, Any]] = {}
        self.users: Dict[str, List[int]] = collections.defaultdict(list)

    def add(self, obj: Dict[str, Any], case: int) -> None:
        same = obj
        if obj.get("kind") == "ConfigMap" and obj.get("data"):
            # its values are opaque text to the API server (the profile, the build spec): a ConfigMap
            # that differs only there is sent once, as the first profile has it
            same = dict(obj, data={k: "" for k in obj["data"]})
        key = hashlib.sha256(json.dumps(same, sort_keys=True).encode()).hexdigest()[:16]
        self.objects.setdefault(key, obj)
        if case not in self.users[key]:
            self.users[key].append(case)


#: kubectl names the file of an object the API server could not take at all ...
_FILE_ERROR = re.compile(r'"(?P<file>/[^"]+\.json)": (?P<message>.*)')
#: ... and only the kind and name of one it refused as invalid
_INVALID = re.compile(r'^The (?P<kind>\S+) "(?P<name>[^"]+)" is invalid: (?P<message>.*)')
#: kubectl processes at once: each waits on the API server between its requests
PARALLEL = 4


def apply_files(plane: Any, paths: Sequence[Path], *args: str) -> List[Tuple[Any, str]]:
    """``kubectl apply ARGS -f PATH`` for each path at once: (the run, its stderr)."""
    runs = [
        subprocess.Popen([str(plane.bins["kubectl"]), "apply", *args, "-f", str(p)], env=plane.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in paths
    ]  # fmt: skip
    return [(run, run.communicate(timeout=900)[1]) for run in runs]


def kubectl_refusals(plane: Any, directories: Sequence[Path], *args: str) -> Dict[str, str]:
    """``kubectl apply ARGS -f DIRECTORY`` for each directory at once: the message of each file the
    API server refused. An invalid object is named by kind and name only, so the files with that
    kind and name are applied again one by one to tell which of them it was."""
    refused: Dict[str, str] = {}
    suspects: Dict[Path, str] = {}
    for (run, stderr), directory in zip(apply_files(plane, directories, *args), directories):
        found = 0
        for line in stderr.splitlines():
            m = _FILE_ERROR.search(line)
            if m:
                refused[Path(m.group("file")).name] = m.group("message")
                found += 1
            m = _INVALID.search(line)
            if m:
                found += 1
                for path in directory.iterdir():
                    obj = json.loads(path.read_text(encoding="utf-8"))
                    if obj.get("kind") == m.group("kind") and obj["metadata"].get("name") == m.group("name"):
                        suspects[path] = m.group("message")
        if run.returncode != 0 and not found:
            raise AssertionError("kubectl apply %s failed without naming an object: %s" % (" ".join(args), stderr))
    paths = sorted(suspects)
    for start in range(0, len(paths), PARALLEL):
        chunk = paths[start : start + PARALLEL]
        for path, (run, stderr) in zip(chunk, apply_files(plane, chunk, *args)):
            if run.returncode != 0:
                refused[path.name] = next((m.group("message") for m in map(_INVALID.search, stderr.splitlines()) if m),
                                          suspects[path])  # fmt: skip
    return refused


def send(plane: Any, directory: Path, sent: Sent, *args: str) -> Dict[str, str]:
    """Write every object of ``sent`` to its own file, in :data:`PARALLEL` directories under
    ``directory``, and apply them; the refusals by object key."""
    parts = [directory / str(n) for n in range(PARALLEL)]
    for part in parts:
        part.mkdir(parents=True)
    for n, (key, obj) in enumerate(sorted(sent.objects.items())):
        (parts[n % PARALLEL] / ("%s.json" % key)).write_text(json.dumps(obj), encoding="utf-8")
    used = [p for p in parts if any(p.iterdir())]
    return {name[: -len(".json")]: message for name, message in kubectl_refusals(plane, used, *args).items()}


def refusal_report(cases: Sequence[Case], sent: Sent, refused: Dict[str, str], what: str) -> List[str]:
    out = []
    for key, message in sorted(refused.items()):
        obj = sent.objects[key]
        meta = obj.get("metadata") or {}
        who = "; ".join(cases[i].describe() for i in sent.users[key][:3])
        out.append(
            "%s %s %s/%s refused: %s\n    from: %s"
            % (what, obj.get("kind"), meta.get("namespace", ""), meta.get("name"), message, who)
        )
    return out


class Clock:
    """Wall seconds of each phase, printed with the test's output (``-s``)."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.laps: List[str] = []

    def lap(self, what: str) -> None:
        now = time.monotonic()
        self.laps.append("%6.1f s  %s" % (now - self.last, what))
        self.last = now

    def __str__(self) -> str:
        return "\n".join([*self.laps, "%6.1f s  in all" % (self.last - self.start)])


def crd_set(case: Case) -> str:
    crds = [o for o in case.objects if o.get("kind") == "CustomResourceDefinition"]
    return hashlib.sha256(json.dumps(crds, sort_keys=True).encode()).hexdigest()[:12]


# --- the Pulumi program's objects where they differ from the render --------------------------------------


def pulumi_differences(case: Case, stack: str, tmp_path: Path) -> List[Dict[str, Any]]:
    """The objects the Pulumi stack ``stack`` registers for the case's edited profile that the
    render does not have as they are (the image a job runs, from the build)."""
    from stacks.test_render_equals_pulumi import stack_objects

    def edit(doc: Dict[str, Any]) -> None:
        for slot, value in case.slots:
            apply(doc, slot, value)

    objects, _, _ = stack_objects(stack, tmp_path, edit)
    render = {}
    for obj in case.objects:
        meta = obj["metadata"]
        ns = meta.get("namespace")
        render[f"{obj['kind']}/{ns}/{meta['name']}" if ns else f"{obj['kind']}/{meta['name']}"] = obj
    return [obj for key, obj in objects.items() if render.get(key) != obj]


def all_stacks() -> Dict[str, str]:
    """Example name -> the ``all`` stack that deploys it."""
    from stacks.pulumi_mocks import PROJECT, stack_config, stack_files

    out = {}
    for path in stack_files():
        config = stack_config(path)
        if config.get(f"{PROJECT}:stackRole", "all") == "all":
            out[Path(config[f"{PROJECT}:profile"]).stem] = path.name[len("Pulumi.") : -len(".yaml")]
    return out


def test_what_validate_accepts_the_api_server_accepts(
    start_plane: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    cases, outcomes = generate()
    clock.lap("generate and render")
    total = sum(outcomes.values())
    print("outcomes over %d generated profiles: %s" % (total, dict(outcomes)))
    assert total * 10 >= EXAMPLES * 9, outcomes
    assert len(cases) * 4 >= total, "too few generated profiles pass validate to test anything: %s" % outcomes
    assert outcomes["refused by validate"] * 4 >= total, "the generator hardly tries a bad value: %s" % outcomes

    # the Pulumi program on a few accepted profiles of the stacks that deploy everything
    from stacks.pulumi_mocks import install_program

    install_program(monkeypatch, tmp_path / "pulumi")
    stacks = all_stacks()
    pulumi_objects: List[Tuple[int, Dict[str, Any]]] = []
    # the edits of a job first (what the program's job components take), one of each kind of edit
    # (not a renamed job: the stack's config names the job, images.<job>)
    renamed = {i for i, c in enumerate(cases) if any(name == "jobs[0].name" for name, _ in c.edits)}
    candidates = sorted((i for i, c in enumerate(cases) if c.example in stacks and i not in renamed),
                        key=lambda i: not any(name.startswith("jobs[") for name, _ in cases[i].edits))  # fmt: skip
    chosen: List[int] = []
    for i in candidates:
        if len(chosen) < PULUMI_CASES and cases[i].describe() not in {cases[j].describe() for j in chosen}:
            chosen.append(i)
    assert chosen, "no accepted profile of an all stack (%s)" % sorted(stacks)
    for n, i in enumerate(chosen):
        for obj in pulumi_differences(cases[i], stacks[cases[i].example], tmp_path / ("pulumi-%d" % n)):
            pulumi_objects.append((i, obj))
    clock.lap("Pulumi program on %d profiles" % len(chosen))

    plane = start_plane()
    clock.lap("control plane start")
    problems: List[str] = []
    groups: Dict[str, List[int]] = collections.defaultdict(list)
    for i, case in enumerate(cases):
        groups[crd_set(case)].append(i)

    # for real: the namespaces and the PriorityClasses every group's objects and pods need
    real = Sent()
    for i, case in enumerate(cases):
        for obj in case.objects:
            if obj["kind"] == "Namespace":
                real.add(obj, i)
            for made in made_from(obj):
                name = made["spec"].get("priorityClassName")
                if name:
                    real.add({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                              "metadata": {"name": name}, "value": 1000}, i)  # fmt: skip
    problems += refusal_report(cases, real, send(plane, tmp_path / "real", real), "creating")
    namespaces = sorted({o["metadata"]["name"] for o in real.objects.values() if o["kind"] == "Namespace"})
    accounts = Sent()  # the pods' ServiceAccount (the controller manager makes it, maybe not yet)
    for ns in namespaces:
        accounts.add(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}, 0
        )
    send(plane, tmp_path / "accounts", accounts)
    clock.lap("namespaces, PriorityClasses and ServiceAccounts")

    for n, (group, members) in enumerate(sorted(groups.items())):
        crds = [o for o in cases[members[0]].objects if o["kind"] == "CustomResourceDefinition"]
        directory = tmp_path / ("crds-%d" % n)
        directory.mkdir()
        for k, crd in enumerate(crds):
            (directory / ("%03d.json" % k)).write_text(json.dumps(crd), encoding="utf-8")
        plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(directory), timeout=300)
        plane.kubectl("wait", "--for=condition=Established", "--timeout=120s", "-f", str(directory), timeout=180)
        sent = Sent()
        for i in members:
            for obj in cases[i].objects:
                if obj["kind"] not in ("CustomResourceDefinition", "Namespace"):
                    sent.add(obj, i)
                for made in made_from(obj):
                    sent.add(made, i)
        for i, obj in pulumi_objects:
            if i in members:
                sent.add(obj, i)
                for made in made_from(obj):
                    sent.add(made, i)
        refused = send(plane, tmp_path / ("dry-run-%d" % n), sent, "--dry-run=server")
        problems += refusal_report(cases, sent, refused, "dry run of")
        counts = (group, len(members), len(sent.objects), len(refused))
        clock.lap("CRD set %s: %d profiles, %d objects sent, %d refused" % counts)
    print(clock)
    assert not problems, "the API server refused what validate accepted:\n" + "\n".join(problems)
