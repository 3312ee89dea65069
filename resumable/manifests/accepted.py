"""What the API server would refuse in the objects a plan deploys, traced back to the profile.

Every profile string ends up somewhere in a Kubernetes object: a name, a namespace, a label key or
value, an annotation, an environment variable's name, a port name, a volume or a mount. Instead of
a second list of profile fields and the rule each must follow, the gate
(:func:`resumable.api.plan_profile`) builds the objects of the plan with the same builders
``render`` and ``pulumi up`` use and checks them the way the API server of Kubernetes 1.28 checks
those places (:func:`refusals`, citing ``KAPI``, the validation source at k8s.io/apimachinery
v0.28.15 and k8s.io/kubernetes v1.28.15). A refused value is traced to the profile field whose
value it holds (:func:`profile_refusals`) and reported there, with the rule and the fix, before
anything is deployed. The pod templates inside the AscendJob and the Volcano Job are checked as
pods: the API server checks a custom resource against its CRD's schema only, and refuses the pods
the Ascend Operator or Volcano later creates from the templates.

The field formats of :mod:`resumable.formats` refuse most of this when the profile is bound, with
the field's own description; this check is what makes the contract hold for every field, present
and future, and for values the plan composes from several fields.
"""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from .. import constants as C
from .. import kubenames as K
from ..errors import ProfileError, ProfileErrors, shown
from ..plan.model import Plan
from ..profile import Profile
from .deployment import default_image, job_objects, workload_namespaces
from .k8s import Obj
from .scheduler import build_stages
from .support import UnsupportedStack

_APIMACHINERY = "KAPI apimachinery pkg/util/validation/validation.go"
_CORE = "KAPI pkg/apis/core/validation/validation.go"
_META = "KAPI apimachinery pkg/api/validation/objectmeta.go"


class Rule(NamedTuple):
    """One of the API server's string rules: the function, what a valid value is, where it is."""

    name: str
    check: Callable[[str], List[str]]
    valid: str
    source: str


DNS1123_LABEL = Rule(
    "IsDNS1123Label",
    K.is_dns1123_label,
    "a lower-case name of letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
    _APIMACHINERY + ":188",
)
DNS1123_SUBDOMAIN = Rule(
    "IsDNS1123Subdomain",
    K.is_dns1123_subdomain,
    "a lower-case name of letters, digits, '-' and '.', starting and ending with a letter or digit, at most "
    "253 characters",
    _APIMACHINERY + ":215",
)
DNS1035_LABEL = Rule(
    "IsDNS1035Label",
    K.is_dns1035_label,
    "a lower-case name of letters, digits and '-', starting with a letter, at most 63 characters",
    _APIMACHINERY + ":236",
)
QUALIFIED_NAME = Rule(
    "IsQualifiedName",
    K.is_qualified_name,
    "a key such as example.com/team: an optional DNS-subdomain prefix and '/', then at most 63 letters, "
    "digits, '-', '_' and '.', starting and ending with a letter or digit",
    _APIMACHINERY + ":43",
)
ANNOTATION_KEY = Rule(
    "IsQualifiedName (lower-cased)", K.is_annotation_key, QUALIFIED_NAME.valid + " (any case)", _META + ":48"
)
LABEL_VALUE = Rule(
    "IsValidLabelValue",
    K.is_valid_label_value,
    "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
    _APIMACHINERY + ":167",
)
ENV_VAR_NAME = Rule(
    "IsEnvVarName",
    K.is_env_var_name,
    "a variable name of letters, digits, '_', '-' and '.', not starting with a digit",
    _APIMACHINERY + ":415",
)
PORT_NAME = Rule(
    "IsValidPortName",
    K.is_valid_port_name,
    "a port name of at most 15 lower-case letters, digits and '-', with a letter",
    _APIMACHINERY + ":334",
)
CONFIG_MAP_KEY = Rule(
    "IsConfigMapKey", K.is_config_map_key, "a key of letters, digits, '-', '_' and '.'", _APIMACHINERY + ":431"
)


def _required(value: str) -> List[str]:
    return [] if value else ["is required"]


def _no_backsteps(value: str) -> List[str]:
    return ["must not contain '..'"] if K.has_backsteps(value) else []


def _absolute(value: str) -> List[str]:
    return [] if posixpath.isabs(value) else ["must be an absolute path"]


REQUIRED = Rule("required", _required, "a value", _CORE)
HOST_PATH = Rule("validatePathNoBacksteps", _no_backsteps, "a path without '..'", _CORE + ":1214")
NFS_PATH = Rule("validateNFSVolumeSource", _absolute, "an absolute path", _CORE + ":969")


def _at(rule: Rule, line: int) -> Rule:
    """``rule`` applied at ``line`` of k8s.io/kubernetes pkg/apis/core/validation/validation.go."""
    return rule._replace(source="%s:%d" % (_CORE, line))


class Refusal(NamedTuple):
    """A value the API server would refuse: in which object, where in it, and by which rule."""

    obj: str
    at: str
    value: str
    rule: Rule
    complaint: str


class _Walk:
    """The checks of one object; each finding is a :class:`Refusal`."""

    def __init__(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        where = "%s/%s" % (meta["namespace"], meta.get("name")) if meta.get("namespace") else meta.get("name")
        self.obj = "%s %s" % (obj.get("kind"), where)
        self.found: List[Refusal] = []

    def check(self, rule: Rule, value: Any, at: str) -> None:
        if not isinstance(value, str):
            return
        complaints = rule.check(value)
        if complaints:
            self.found.append(Refusal(self.obj, at, value, rule, complaints[0]))

    def unique(self, values: Sequence[Tuple[str, str]], what: str, source: str) -> None:
        """Each ``(value, at)`` once (volume names, port names, mount paths)."""
        seen: Dict[str, str] = {}
        for value, at in values:
            if value in seen:
                rule = Rule("unique " + what, lambda _v: [], "a %s no other entry has" % what, source)
                self.found.append(Refusal(self.obj, at, value, rule, "repeats the %s of %s" % (what, seen[value])))
            else:
                seen[value] = at

    def metadata(self, meta: Mapping[str, Any], at: str) -> None:
        """ObjectMeta's labels and annotations (objectmeta.go:142 ValidateObjectMetaAccessor)."""
        for key, value in (meta.get("labels") or {}).items():
            self.check(QUALIFIED_NAME, key, "%s.labels (key)" % at)
            self.check(LABEL_VALUE, value, "%s.labels[%s]" % (at, key))
        annotations = meta.get("annotations") or {}
        for key in annotations:
            self.check(ANNOTATION_KEY, key, "%s.annotations (key)" % at)
        size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > K.ANNOTATIONS_MAX_BYTES:
            biggest = max(annotations, key=lambda k: len(str(annotations[k]).encode()))
            rule = Rule(
                "ValidateAnnotationsSize",
                lambda _v: [],
                "annotations of at most %d bytes together" % K.ANNOTATIONS_MAX_BYTES,
                _META + ":58",
            )
            self.found.append(
                Refusal(
                    self.obj,
                    "%s.annotations[%s]" % (at, biggest),
                    str(annotations[biggest]),
                    rule,
                    "the annotations are %d bytes together (at most %d)" % (size, K.ANNOTATIONS_MAX_BYTES),
                )
            )

    def pod(self, template: Mapping[str, Any], at: str) -> None:
        """A pod template as the API server checks a pod (ValidatePodSpec, validation.go:3943)."""
        self.metadata(template.get("metadata") or {}, at + ".metadata")
        spec = template.get("spec") or {}
        at = at + ".spec" if at else "spec"
        volumes = spec.get("volumes") or []
        for i, v in enumerate(volumes):
            where = "%s.volumes[%d]" % (at, i)
            self.check(_at(DNS1123_LABEL, 410), v.get("name"), where + ".name")
            if "hostPath" in v:
                self.check(_at(REQUIRED, 745), v["hostPath"].get("path", ""), where + ".hostPath.path")
                self.check(HOST_PATH, v["hostPath"].get("path"), where + ".hostPath.path")
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"].get("claimName", "")
                self.check(_at(REQUIRED, 955), claim, where + ".persistentVolumeClaim.claimName")
            if "configMap" in v:
                self.check(_at(REQUIRED, 919), v["configMap"].get("name", ""), where + ".configMap.name")
            if "secret" in v:
                self.check(_at(REQUIRED, 901), v["secret"].get("secretName", ""), where + ".secret.secretName")
            if "nfs" in v:
                self.check(_at(REQUIRED, 963), v["nfs"].get("server", ""), where + ".nfs.server")
                self.check(NFS_PATH, v["nfs"].get("path", ""), where + ".nfs.path")
        self.unique(
            [(v.get("name"), "%s.volumes[%d].name" % (at, i)) for i, v in enumerate(volumes)],
            "volume name",
            _CORE + ":412",
        )
        names = {v.get("name") for v in volumes}
        for part in ("initContainers", "containers"):
            for i, c in enumerate(spec.get(part) or []):
                self.container(c, "%s.%s[%d]" % (at, part, i), names)
        for key, value in (spec.get("nodeSelector") or {}).items():
            self.check(QUALIFIED_NAME, key, at + ".nodeSelector (key)")
            self.check(LABEL_VALUE, value, "%s.nodeSelector[%s]" % (at, key))
        for i, t in enumerate(spec.get("tolerations") or []):
            where = "%s.tolerations[%d]" % (at, i)
            if t.get("key"):
                self.check(_at(QUALIFIED_NAME, 3728), t["key"], where + ".key")
            if t.get("operator", "Equal") == "Equal":
                self.check(_at(LABEL_VALUE, 3746), t.get("value", ""), where + ".value")
        if spec.get("priorityClassName"):
            self.check(_at(DNS1123_SUBDOMAIN, 4002), spec["priorityClassName"], at + ".priorityClassName")
        if spec.get("serviceAccountName"):
            self.check(_at(DNS1123_SUBDOMAIN, 3967), spec["serviceAccountName"], at + ".serviceAccountName")

    def container(self, c: Mapping[str, Any], at: str, volumes: Any) -> None:
        """validateContainerCommon (validation.go:3320): name, image, ports, env, mounts."""
        self.check(_at(DNS1123_LABEL, 3327), c.get("name"), at + ".name")
        self.check(_at(REQUIRED, 3334), c.get("image", ""), at + ".image")
        ports = c.get("ports") or []
        for i, p in enumerate(ports):
            if p.get("name"):
                self.check(_at(PORT_NAME, 2380), p["name"], "%s.ports[%d].name" % (at, i))
        self.unique(
            [(p["name"], "%s.ports[%d].name" % (at, i)) for i, p in enumerate(ports) if p.get("name")],
            "port name",
            _CORE + ":2384",
        )
        for i, e in enumerate(c.get("env") or []):
            self.check(_at(ENV_VAR_NAME, 2420), e.get("name"), "%s.env[%d].name" % (at, i))
        mounts = c.get("volumeMounts") or []
        for i, m in enumerate(mounts):
            where = "%s.volumeMounts[%d]" % (at, i)
            self.check(_at(REQUIRED, 2713), m.get("mountPath", ""), where + ".mountPath")
            if m.get("name") not in volumes:
                rule = Rule("IsMatchedVolume", lambda _v: [], "the name of a volume of the pod", _CORE + ":2710")
                self.found.append(Refusal(self.obj, where + ".name", str(m.get("name")), rule, "names no volume"))
        self.unique(
            [(m.get("mountPath"), "%s.volumeMounts[%d].mountPath" % (at, i)) for i, m in enumerate(mounts)],
            "mount path",
            _CORE + ":2716",
        )


#: The name rule of each kind whose names are not DNS subdomains (KAPI pkg/apis/core/validation/
#: validation.go:255 services, apimachinery pkg/api/validation/generic.go:63 namespaces); RBAC
#: names are path segments (pkg/apis/rbac/validation/validation.go:32), never built from the profile.
_NAME_RULES: Dict[str, Optional[Rule]] = {
    "Namespace": DNS1123_LABEL._replace(source="KAPI apimachinery pkg/api/validation/generic.go:63"),
    "Service": DNS1035_LABEL._replace(source=_CORE + ":255"),
    "ClusterRole": None,
    "ClusterRoleBinding": None,
    "Role": None,
    "RoleBinding": None,
    "CustomResourceDefinition": None,
}


def pod_templates(obj: Obj) -> Iterator[Tuple[str, Mapping[str, Any]]]:
    """``(path, template)`` of every pod template of ``obj``: a workload's ``spec.template``, an
    AscendJob's ``spec.replicaSpecs.<type>.template``, a Volcano Job's ``spec.tasks[i].template``."""
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if isinstance(spec.get("template"), dict):
        yield "spec.template", spec["template"]
    for name, replica in (spec.get("replicaSpecs") or {}).items():
        if isinstance(replica, dict) and isinstance(replica.get("template"), dict):
            yield "spec.replicaSpecs.%s.template" % name, replica["template"]
    for i, task in enumerate(spec.get("tasks") or []):
        if isinstance(task, dict) and isinstance(task.get("template"), dict):
            yield "spec.tasks[%d].template" % i, task["template"]


def refusals(obj: Obj) -> List[Refusal]:
    """What the API server would refuse in ``obj`` (and in the pods its templates become) among the
    places a profile value can land."""
    walk = _Walk(obj)
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind"))
    name_rule = _NAME_RULES.get(kind, DNS1123_SUBDOMAIN._replace(source="KAPI apimachinery "
                                                               "pkg/api/validation/generic.go:37"))  # fmt: skip
    if name_rule is not None:
        walk.check(name_rule, meta.get("name", ""), "metadata.name")
    if meta.get("namespace"):
        walk.check(DNS1123_LABEL._replace(source=_META + ":177"), meta["namespace"], "metadata.namespace")
    walk.metadata(meta, "metadata")
    if kind == "Pod":
        walk.pod({"spec": obj.get("spec") or {}}, "")
    for at, template in pod_templates(obj):
        walk.pod(template, at)
    spec = obj.get("spec") or {}
    if kind == "PersistentVolume":
        nfs = spec.get("nfs") or {}
        if nfs:
            walk.check(_at(REQUIRED, 963), nfs.get("server", ""), "spec.nfs.server")
            walk.check(NFS_PATH, nfs.get("path", ""), "spec.nfs.path")
        if spec.get("storageClassName"):
            walk.check(_at(DNS1123_SUBDOMAIN, 1956), spec["storageClassName"], "spec.storageClassName")
    if kind == "PersistentVolumeClaim" and spec.get("storageClassName"):
        walk.check(_at(DNS1123_SUBDOMAIN, 2179), spec["storageClassName"], "spec.storageClassName")
    if kind == "ConfigMap":
        for key in obj.get("data") or {}:
            walk.check(_at(CONFIG_MAP_KEY, 6278), key, "data (key)")
    return walk.found


# --- tracing a refused value to the profile ---------------------------------------------------------


def profile_strings(profile: Profile) -> List[Tuple[str, str]]:
    """``(path, value)`` of every string of the bound profile, mapping keys included (their path
    says ``(key ...)``), in the profile's own order and path spelling."""
    out: List[Tuple[str, str]] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            if value:
                out.append((path, value))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name), "%s.%s" % (path, f.name) if path else f.name)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, "%s[%d]" % (path, i))
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    out.append(("%s (key %s)" % (path, shown(key, 40)), key))
                walk(item, "%s.%s" % (path, key))

    walk(profile, "")
    return out


def _holds(value: str, part: str) -> bool:
    """``part`` is in ``value`` as a whole word of a name or path (after and before nothing, or a
    separator): ``Llama`` in ``resumable-profile-Llama``, not ``on`` in ``Container``."""
    start = value.find(part)
    while start >= 0:
        end = start + len(part)
        if (start == 0 or value[start - 1] in _SEPARATORS) and (end == len(value) or value[end] in _SEPARATORS):
            return True
        start = value.find(part, start + 1)
    return False


_SEPARATORS = "-./_:=@,;'\" \t"


def culprits(value: str, strings: Sequence[Tuple[str, str]]) -> List[str]:
    """The profile paths whose value ``value`` holds: those equal to it, else the longest that it
    holds as a word (a job name inside ``resumable-profile-<job>``)."""
    equal = [path for path, v in strings if v == value]
    if equal:
        return equal
    inside = [(len(v), path) for path, v in strings if _holds(value, v)]
    if not inside:
        return []
    longest = max(n for n, _ in inside)
    return [path for n, path in inside if n == longest]


#: The replica whose Service the Ascend Operator creates: the master role, Master (PyTorch) or
#: Scheduler (MindSpore) (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/jobinfo.go:157-186
#: getOrCreateSvc, the same at v26.1.0).
MASTER_REPLICAS = ("Master", "Scheduler")
OPERATOR_SOURCE = (
    "MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/jobinfo.go:157-186, service.go:40-60; "
    "kubeflow/common v0.4.3 pkg/controller.v1/common/util.go:50 GenGeneralName"
)


def operator_name(job: str, replica: str, index: int = 0) -> str:
    """What the Ascend Operator names a replica's pod and the master's Service: kubeflow's
    GenGeneralName, ``<job>-<replica type, lower case>-<index>``."""
    return "%s-%s-%d" % (job, replica.lower(), index)


def operator_objects(obj: Obj) -> List[Obj]:
    """The Service the Ascend Operator creates for an AscendJob (:data:`OPERATOR_SOURCE`): named
    after the job's master replica, a DNS-1035 label (so the job's name starts with a letter and
    leaves room for ``-master-0``), selecting its pod, with the master container's named ports."""
    if obj.get("kind") != C.ASCENDJOB_KIND:
        return []
    specs = (obj.get("spec") or {}).get("replicaSpecs") or {}
    master = next((r for r in MASTER_REPLICAS if r in specs), None)
    if master is None:
        return []
    meta = obj["metadata"]
    containers = ((specs[master].get("template") or {}).get("spec") or {}).get("containers") or [{}]
    ports = [{"name": p["name"], "port": p["containerPort"]} for p in containers[0].get("ports") or [] if p.get("name")]
    labels = {"job-name": meta["name"], "replica-type": master.lower(), "replica-index": "0"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": operator_name(meta["name"], master), "namespace": meta.get("namespace"),
                         "labels": labels},
            "spec": {"selector": labels, "ports": ports},
        }
    ]  # fmt: skip


class ObjectsRefused(Exception):
    """An object the plan builds is refused where no profile value explains it: a bug of ours."""


def plan_objects(plan: Plan) -> List[Tuple[Obj, str]]:
    """The objects the plan deploys, as ``render`` and ``pulumi up`` build them: the scheduling
    stack (when the release's stack is deployable), the jobs' namespaces and storage, each job; and
    the Service the Ascend Operator creates for each AscendJob (:func:`operator_objects`); each with
    who makes it, when not the deployment itself."""
    from . import storage

    objects: List[Obj] = []
    with contextlib.suppress(UnsupportedStack):  # render refuses it by itself; the jobs are checked all the same
        objects += [o for stage in build_stages(plan.scheduler) for o in stage.objects]
    objects += workload_namespaces(plan) + storage.objects(plan.storage)
    out = [(o, "") for o in objects]
    operator = " (created by the Ascend Operator for the AscendJob: %s)" % OPERATOR_SOURCE
    for job in plan.jobs:
        built = job_objects(plan, job, default_image(plan, job), "")
        out += [(o, "") for o in built] + [(o, operator) for b in built for o in operator_objects(b)]
    return out


def profile_refusals(plan: Plan, profile: Profile) -> List[ProfileError]:
    """Each value of the profile the API server would refuse where the plan puts it, as a
    :class:`~resumable.errors.ProfileError` at the field's path (once per field and rule)."""
    strings = profile_strings(profile)
    out: List[ProfileError] = []
    seen = set()
    for obj, made_by in plan_objects(plan):
        for r in refusals(obj):
            r = r._replace(obj=r.obj + made_by)
            paths = culprits(r.value, strings)
            if not paths:
                raise ObjectsRefused(
                    "%s: %s %s is refused by %s (%s) and holds no profile value" % (r.obj, r.at, shown(r.value),
                                                                                    r.rule.name, r.complaint)
                )  # fmt: skip
            for path in paths:
                if (path, r.rule.name) in seen:
                    continue
                seen.add((path, r.rule.name))
                out.append(_problem(path, r, dict(strings).get(path) == r.value))
    return out


def _problem(path: str, r: Refusal, whole: bool) -> ProfileError:
    what = "the key" if path.endswith(")") else "the value"
    if whole:
        fix = "Write %s." % r.rule.valid
    else:
        fix = "Change it so that %s, which is built from it, is %s (a shorter or plainer value)." % (
            shown(r.value),
            r.rule.valid,
        )
    return ProfileError(
        "%s lands in %s at %s%s, which the API server refuses (%s, %s: %s)"
        % (what, r.obj, r.at, "" if whole else " as %s" % shown(r.value), r.rule.name, r.rule.source, r.complaint),
        path,
        fix,
    )


def check(plan: Plan, profile: Profile, source: str) -> None:
    """Raise :class:`~resumable.errors.ProfileErrors` (each problem at ``source: <field>``) when the
    API server would refuse a profile value where the plan puts it."""
    found = profile_refusals(plan, profile)
    if found:
        errors = ProfileErrors(found)
        errors.prefix(source)
        raise errors
