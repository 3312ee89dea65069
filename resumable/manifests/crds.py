"""The AscendJob and Volcano CustomResourceDefinitions, with trimmed structural schemas.

Group, version, kind, plural, short names, scope, subresources and printer columns are those of
the release manifests (``ascend-operator.yaml``; ``volcano-v1.x.0.yaml``). The openAPIV3Schema
covers the top-level structure and the fields this project sets; everything below (pod templates,
Volcano task specs, statuses) is ``x-kubernetes-preserve-unknown-fields``. The full upstream
schemas (hundreds of kB of PodTemplateSpec) can be deployed verbatim instead, from the user's copy
of the release files: see :func:`load_crds` and ``docs/scheduler.md``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .. import safeyaml
from ..errors import ResumableError, shown
from ..fileio import MANIFEST_MAX_BYTES, read_text
from ..releases import VOLCANO_BUILDS
from .k8s import Obj
from .volcano import is_19, is_112

ASCENDJOB_CRD = "ascendjobs.mindxdl.gitee.com"
RESTART_POLICIES = ["Always", "OnFailure", "Never", "ExitCode"]

PRESERVE: Obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _obj(properties: Dict[str, Any], required: Optional[List[str]] = None, preserve: bool = False) -> Obj:
    schema: Obj = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if preserve:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def _int(fmt: str = "int32", minimum: Optional[int] = None) -> Obj:
    schema: Obj = {"type": "integer", "format": fmt}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


STRING: Obj = {"type": "string"}
QUANTITY_MAP: Obj = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
}


def _root(spec: Obj, status: Optional[Obj] = None) -> Obj:
    props: Dict[str, Any] = {
        "apiVersion": STRING,
        "kind": STRING,
        "metadata": {"type": "object"},
        "spec": spec,
    }
    if status is not None:
        props["status"] = status
    return {"type": "object", "properties": props}


def crd(
    group: str,
    kind: str,
    plural: str,
    singular: str,
    short_names: Sequence[str],
    scope: str,
    version: str,
    schema: Obj,
    status_subresource: bool,
    printer: Optional[List[Obj]] = None,
) -> Obj:
    names: Obj = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": singular}
    if short_names:
        names["shortNames"] = list(short_names)
    ver: Obj = {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    if status_subresource:
        ver["subresources"] = {"status": {}}
    if printer:
        ver["additionalPrinterColumns"] = printer
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [ver]},
    }


def _col(name: str, path: str, type_: str, priority: Optional[int] = None) -> Obj:
    col: Obj = {"name": name, "jsonPath": path, "type": type_}
    if priority is not None:
        col["priority"] = priority
    return col


# --- AscendJob (mindxdl.gitee.com/v1; MC:@v7.3.0 component/ascend-operator/build/ascend-operator.yaml) ---


def ascendjob_schema() -> Obj:
    replica = _obj(
        {
            "replicas": _int(),
            # Upstream only names the values in the description; the enum rejects a typo at
            # admission instead of at reconcile (JobValidFailed).
            "restartPolicy": {"type": "string", "enum": RESTART_POLICIES},
            "template": {**PRESERVE, "description": "core/v1 PodTemplateSpec (not expanded here)"},
        }
    )
    scheduling = _obj(
        {
            "minAvailable": _int(),
            "minResources": QUANTITY_MAP,
            "priorityClass": STRING,
            "queue": STRING,
        }
    )
    run_policy = _obj(
        {
            "activeDeadlineSeconds": _int("int64"),
            "backoffLimit": _int(),
            "cleanPodPolicy": STRING,
            "schedulingPolicy": scheduling,
            "ttlSecondsAfterFinished": _int(),
        }
    )
    spec = _obj(
        {
            "replicaSpecs": {"type": "object", "additionalProperties": replica},
            "runPolicy": run_policy,
            "schedulerName": STRING,
            "successPolicy": STRING,
        },
        required=["replicaSpecs"],
    )
    condition = _obj(
        {
            "type": STRING,
            "status": STRING,
            "reason": STRING,
            "message": STRING,
            "lastUpdateTime": {"type": "string", "format": "date-time"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
        required=["type", "status"],
    )
    replica_status = _obj({"active": _int(), "failed": _int(), "succeeded": _int(), "labelSelector": PRESERVE})
    status = _obj(
        {
            "conditions": {"type": "array", "items": condition},
            "replicaStatuses": {"type": "object", "additionalProperties": replica_status},
            "startTime": {"type": "string", "format": "date-time"},
            "completionTime": {"type": "string", "format": "date-time"},
            "lastReconcileTime": {"type": "string", "format": "date-time"},
        }
    )
    return _root(spec, status)


def ascendjob_crd() -> Obj:
    return crd(
        "mindxdl.gitee.com",
        "AscendJob",
        "ascendjobs",
        "ascendjob",
        ["acjob"],
        "Namespaced",
        "v1",
        ascendjob_schema(),
        status_subresource=True,
        printer=[
            _col("State", ".status.conditions[-1:].type", "string"),
            _col("Age", ".metadata.creationTimestamp", "date"),
        ],
    )


# --- Volcano (volcano-v1.x.0.yaml) ----------------------------------------------------------------


def _vcjob_spec() -> Obj:
    task = _obj(
        {
            "name": STRING,
            "replicas": _int(),
            "minAvailable": _int(),
            "maxRetry": _int(),
            "policies": {"type": "array", "items": PRESERVE},
            "template": PRESERVE,
        },
        preserve=True,
    )
    return _obj(
        {
            "minAvailable": _int(),
            "maxRetry": _int(),
            "queue": STRING,
            "schedulerName": STRING,
            "priorityClassName": STRING,
            "plugins": {"type": "object", "additionalProperties": {"type": "array", "items": STRING}},
            "policies": {"type": "array", "items": PRESERVE},
            "tasks": {"type": "array", "items": task},
            "ttlSecondsAfterFinished": _int(),
            "volumes": {"type": "array", "items": PRESERVE},
        },
        preserve=True,
    )


def _job_cols() -> List[Obj]:
    return [
        _col("STATUS", ".status.state.phase", "string"),
        _col("minAvailable", ".status.minAvailable", "integer"),
        _col("RUNNINGS", ".status.running", "integer"),
        _col("AGE", ".metadata.creationTimestamp", "date"),
        _col("QUEUE", ".spec.queue", "string", 1),
    ]


def volcano_crds(volcano: str) -> List[Obj]:
    """The CRDs of the MindCluster Volcano build: 1.9 adds flow.volcano.sh, 1.12 HyperNodes."""
    podgroup_spec = _obj(
        {
            "minMember": _int(),
            "minResources": QUANTITY_MAP,
            "minTaskMember": {"type": "object", "additionalProperties": _int()},
            "priorityClassName": STRING,
            "queue": STRING,
        },
        preserve=True,
    )
    queue_spec = _obj({"weight": _int(), "capability": QUANTITY_MAP, "reclaimable": {"type": "boolean"}}, preserve=True)
    command = {
        "type": "object",
        "properties": {
            "apiVersion": STRING,
            "kind": STRING,
            "metadata": {"type": "object"},
            "action": STRING,
            "message": STRING,
            "reason": STRING,
            "target": PRESERVE,
        },
    }
    out = [
        crd(
            "batch.volcano.sh",
            "Job",
            "jobs",
            "job",
            ["vcjob", "vj"],
            "Namespaced",
            "v1alpha1",
            _root(_vcjob_spec(), PRESERVE),
            True,
            _job_cols(),
        ),
        crd("bus.volcano.sh", "Command", "commands", "command", [], "Namespaced", "v1alpha1", command, False),
        crd(
            "scheduling.volcano.sh",
            "PodGroup",
            "podgroups",
            "podgroup",
            ["pg", "podgroup-v1beta1"],
            "Namespaced",
            "v1beta1",
            _root(podgroup_spec, PRESERVE),
            False,
            [
                _col("STATUS", ".status.phase", "string"),
                _col("minMember", ".spec.minMember", "integer"),
                _col("RUNNINGS", ".status.running", "integer"),
                _col("AGE", ".metadata.creationTimestamp", "date"),
                _col("QUEUE", ".spec.queue", "string", 1),
            ],
        ),
        crd(
            "scheduling.volcano.sh",
            "Queue",
            "queues",
            "queue",
            ["q", "queue-v1beta1"],
            "Cluster",
            "v1beta1",
            _root(queue_spec, PRESERVE),
            True,
            [_col("PARENT", ".spec.parent", "string")] if is_112(volcano) else None,
        ),
        crd(
            "nodeinfo.volcano.sh",
            "Numatopology",
            "numatopologies",
            "numatopology",
            ["numatopo"],
            "Cluster",
            "v1alpha1",
            _root(PRESERVE),
            False,
        ),
    ]
    if is_112(volcano):
        out.append(
            crd(
                "topology.volcano.sh",
                "HyperNode",
                "hypernodes",
                "hypernode",
                ["hn"],
                "Cluster",
                "v1alpha1",
                _root(PRESERVE, PRESERVE),
                True,
                [
                    _col("Tier", ".spec.tier", "string"),
                    _col("NodeCount", ".status.nodeCount", "integer"),
                    _col("Age", ".metadata.creationTimestamp", "date"),
                ],
            )
        )
    if is_19(volcano):
        out.append(
            crd(
                "flow.volcano.sh",
                "JobTemplate",
                "jobtemplates",
                "jobtemplate",
                ["jt"],
                "Namespaced",
                "v1alpha1",
                _root(_vcjob_spec(), PRESERVE),
                True,
            )
        )
        out.append(
            crd(
                "flow.volcano.sh",
                "JobFlow",
                "jobflows",
                "jobflow",
                ["jf"],
                "Namespaced",
                "v1alpha1",
                _root(PRESERVE, PRESERVE),
                True,
                [
                    _col("Status", ".status.state.phase", "string"),
                    _col("Age", ".metadata.creationTimestamp", "date"),
                ],
            )
        )
    return out


# --- verbatim CRDs from the user's release files ----------------------------------------------------


class CrdSourceError(ResumableError):
    """A CRD source file that cannot be used."""


_CRD_FIX = "Pass the release's ascend-operator-v<ver>.yaml and/or volcano-v<x>.yaml from the MindCluster zip"


def load_crds(paths: Sequence[str]) -> Dict[str, Obj]:
    """CustomResourceDefinitions found in the given release YAML files (e.g. the user's
    ``ascend-operator-v26.0.0.yaml`` and ``volcano-v1.9.0.yaml``), by name.

    A source is read like any user file (a regular file of at most
    :data:`~resumable.fileio.MANIFEST_MAX_BYTES`, UTF-8, bounded YAML); every document must be a
    Kubernetes object, and every CRD in it a well-formed ``apiextensions.k8s.io/v1`` definition
    whose name is ``<plural>.<group>``."""
    found: Dict[str, Obj] = {}
    for raw in paths:
        text = read_text(raw, what="CRD source", limit=MANIFEST_MAX_BYTES, error=CrdSourceError, fix=_CRD_FIX)
        docs = safeyaml.load_all(text, raw, safeyaml.MANIFEST, CrdSourceError, _CRD_FIX)
        crds: List[Obj] = []
        for index, doc in enumerate(docs):
            if doc is None:
                continue  # an empty document between two "---"
            if not isinstance(doc, dict):
                raise CrdSourceError(
                    "document %d is %s, not a Kubernetes object (a mapping)" % (index + 1, _kind(doc)), raw, _CRD_FIX
                )
            if doc.get("kind") == "CustomResourceDefinition":
                crds.append(_checked_crd(doc, raw, index))
        if not crds:
            raise CrdSourceError("the CRD source contains no CustomResourceDefinition", raw, _CRD_FIX)
        known = _deployable()
        names = [doc["metadata"]["name"] for doc in crds]
        if not any(n in known for n in names):
            raise CrdSourceError(
                "none of the CRDs in the CRD source (%s) is one this stack deploys (%s)"
                % (_names(names), _names(list(known))),
                raw,
                _CRD_FIX,
            )
        for doc in crds:
            if doc["metadata"]["name"] in known:
                _check_replaces(known[doc["metadata"]["name"]], doc, raw)
        for doc in crds:
            doc.pop("status", None)  # written by the API server, not part of what is applied
            doc["metadata"].pop("creationTimestamp", None)
            found[doc["metadata"]["name"]] = doc
    return found


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "the text %s" % shown(value, 40)
    return "the value %s" % shown(value, 40)


def _checked_crd(doc: Obj, source: str, index: int) -> Obj:
    """``doc`` when it is a CRD the API server would accept in the parts we rely on."""
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    label = "CustomResourceDefinition %s(document %d)" % (shown(name, 60) + " " if name else "", index + 1)

    def bad(problem: str) -> CrdSourceError:
        return CrdSourceError("%s %s" % (label, problem), source, _CRD_FIX)

    if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
        raise bad("has apiVersion %s, not apiextensions.k8s.io/v1" % shown(doc.get("apiVersion"), 40))
    if not isinstance(name, str) or not name:
        raise bad("has no metadata.name")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise bad("has no spec mapping")
    group, names = spec.get("group"), spec.get("names")
    if not isinstance(group, str) or not isinstance(names, dict):
        raise bad("has no spec.group or spec.names")
    plural, kind = names.get("plural"), names.get("kind")
    if not isinstance(plural, str) or not isinstance(kind, str) or not plural or not kind:
        raise bad("has no spec.names.plural or spec.names.kind")
    if name != "%s.%s" % (plural, group):
        raise bad("is not named <plural>.<group> (%s.%s)" % (shown(plural, 40)[1:-1], shown(group, 40)[1:-1]))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        raise bad("has spec.scope %s, not Namespaced or Cluster" % shown(spec.get("scope"), 40))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        raise bad("has no spec.versions")
    for v in versions:
        if not isinstance(v, dict) or not isinstance(v.get("name"), str):
            raise bad("has a spec.versions entry without a name")
        schema = v.get("schema")
        if not isinstance(schema, dict) or not isinstance(schema.get("openAPIV3Schema"), dict):
            raise bad("version %s has no schema.openAPIV3Schema" % shown(v["name"], 40))
        if not isinstance(v.get("served"), bool) or not isinstance(v.get("storage"), bool):
            raise bad("version %s lacks served/storage booleans" % shown(v["name"], 40))
    if sum(1 for v in versions if v["storage"]) != 1:
        raise bad("has not exactly one storage version")
    return doc


def _names(names: Sequence[str]) -> str:
    return ", ".join(shown(n, 60)[1:-1] for n in names[:8]) + (", ..." if len(names) > 8 else "")


def _deployable() -> Dict[str, Obj]:
    """Every CRD this stack may deploy, by name (the Volcano builds differ in which they have)."""
    out: Dict[str, Obj] = {}
    for build in VOLCANO_BUILDS:
        for c in volcano_crds(build):
            out[c["metadata"]["name"]] = c
    asc = ascendjob_crd()
    out[asc["metadata"]["name"]] = asc
    return out


def _check_replaces(ours: Obj, theirs: Obj, source: str) -> None:
    """``theirs`` may replace ``ours`` (same name) only if it defines the same resource: same kind
    and scope, serving every version we create objects in."""
    mine, other = ours["spec"], theirs["spec"]
    served = {v["name"] for v in other["versions"] if v["served"]}
    wanted = {v["name"] for v in mine["versions"]}
    if other["names"]["kind"] != mine["names"]["kind"] or other["scope"] != mine["scope"] or not wanted <= served:
        raise CrdSourceError(
            "its %s (kind %s, scope %s, served versions %s) does not define the resource this stack uses "
            "(kind %s, scope %s, version %s)"
            % (
                ours["metadata"]["name"],
                shown(other["names"]["kind"], 40),
                shown(other["scope"], 20),
                _names(sorted(str(v) for v in served)) or "none",
                mine["names"]["kind"],
                mine["scope"],
                ", ".join(sorted(wanted)),
            ),
            source,
            _CRD_FIX,
        )


def crds(volcano: str, verbatim: Optional[Dict[str, Obj]] = None) -> List[Obj]:
    """Volcano CRDs then the AscendJob CRD; a CRD of the same name in ``verbatim`` (checked by
    :func:`load_crds`) replaces ours."""
    ours = [*volcano_crds(volcano), ascendjob_crd()]
    if not verbatim:
        return ours
    return [verbatim.get(c["metadata"]["name"], c) for c in ours]
