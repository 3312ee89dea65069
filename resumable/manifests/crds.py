"""The AscendJob and Volcano CustomResourceDefinitions, with trimmed structural schemas.

Group, version, kind, plural, short names, scope, subresources and printer columns are those of
the release manifests (``ascend-operator.yaml``; ``volcano-v1.x.0.yaml``). The openAPIV3Schema
covers the top-level structure and the fields this project sets; everything below (pod templates,
Volcano task specs, statuses) is ``x-kubernetes-preserve-unknown-fields``. The full upstream
schemas (hundreds of kB of PodTemplateSpec) can be deployed verbatim instead, from the user's copy
of the release files: see :func:`load_crds` and ``docs/scheduler.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import yaml

from ..errors import ResumableError
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
    ``ascend-operator-v26.0.0.yaml`` and ``volcano-v1.9.0.yaml``), by name."""
    found: Dict[str, Obj] = {}
    for raw in paths:
        path = Path(raw)
        try:
            with path.open(encoding="utf-8") as handle:
                docs = [d for d in yaml.safe_load_all(handle) if isinstance(d, dict)]
        except (OSError, yaml.YAMLError) as exc:
            raise CrdSourceError(f"cannot read the CRD source: {exc}", raw, _CRD_FIX) from exc
        crds = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
        if not crds:
            raise CrdSourceError("the CRD source contains no CustomResourceDefinition", raw, _CRD_FIX)
        for doc in crds:
            doc.pop("status", None)  # written by the API server, not part of what is applied
            meta = doc.get("metadata") or {}
            meta.pop("creationTimestamp", None)
            found[str(meta.get("name"))] = doc
    return found


def crds(volcano: str, verbatim: Optional[Dict[str, Obj]] = None) -> List[Obj]:
    """Volcano CRDs then the AscendJob CRD; a CRD of the same name in ``verbatim`` replaces ours."""
    ours = [*volcano_crds(volcano), ascendjob_crd()]
    if not verbatim:
        return ours
    return [verbatim.get(c["metadata"]["name"], c) for c in ours]
