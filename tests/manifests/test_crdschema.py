"""Custom resources against CRD schemas: the AscendJob CRD built here and the upstream one."""

from __future__ import annotations

import copy
import re
from typing import Any, Dict

import pytest

from resumable.manifests import crds

from .crdschema import validate_cr
from .facts import first, load_objects
from .upstream import release_dir


def ascendjob() -> Dict[str, Any]:
    """A PyTorch AscendJob as the job templates of this project write one (Master + Worker)."""
    template = {
        "metadata": {"labels": {"framework": "pytorch", "ring-controller.atlas": "ascend-910b"}},
        "spec": {
            "containers": [
                {"name": "ascend", "image": "train:1", "ports": [{"name": "ascendjob-port", "containerPort": 2222}]}
            ]
        },
    }
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "llama", "namespace": "training", "labels": {"framework": "pytorch"}},
        "spec": {
            "schedulerName": "volcano",
            "runPolicy": {"backoffLimit": 10, "schedulingPolicy": {"minAvailable": 4, "queue": "default"}},
            "successPolicy": "AllWorkers",
            "replicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "Never", "template": template},
                "Worker": {"replicas": 3, "restartPolicy": "Never", "template": template},
            },
        },
    }


@pytest.fixture(params=["6.0.0", "7.3.0", "26.0.0", "26.1.0"])
def upstream_crd(request: Any) -> Dict[str, Any]:
    objects = load_objects(release_dir(request.param) / "ascend-operator.yaml")
    return first(objects, "CustomResourceDefinition", crds.ASCENDJOB_CRD)


def test_sample_satisfies_upstream_and_our_schema(upstream_crd: Dict[str, Any]) -> None:
    assert validate_cr(ascendjob(), upstream_crd) == []
    assert validate_cr(ascendjob(), crds.ascendjob_crd()) == []


@pytest.mark.parametrize(
    "path, value",
    [
        (("spec", "replicaSpecs", "Worker", "replicas"), "three"),
        (("spec", "runPolicy", "backoffLimit"), "ten"),
        (("spec", "runPolicy", "schedulingPolicy", "minAvailable"), "all"),
        (("spec", "schedulerName"), 7),
    ],
)
def test_both_schemas_reject_the_same_mistakes(upstream_crd: Dict[str, Any], path: Any, value: Any) -> None:
    cr = copy.deepcopy(ascendjob())
    node = cr
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert validate_cr(cr, upstream_crd), "upstream schema accepted the mutation"
    assert validate_cr(cr, crds.ascendjob_crd()), "our schema accepted what upstream rejects"


def test_missing_replica_specs_is_rejected_by_both(upstream_crd: Dict[str, Any]) -> None:
    cr = ascendjob()
    del cr["spec"]["replicaSpecs"]
    assert validate_cr(cr, upstream_crd)
    assert validate_cr(cr, crds.ascendjob_crd())


def test_restart_policy_enum_is_what_upstream_documents(upstream_crd: Dict[str, Any]) -> None:
    """Upstream types restartPolicy as a plain string and names the values in its description;
    our CRD makes them an enum (intended difference D3 in docs/scheduler.md)."""
    schema = upstream_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    replica = schema["properties"]["spec"]["properties"]["replicaSpecs"]["additionalProperties"]
    description = replica["properties"]["restartPolicy"]["description"]
    named = re.findall(r"\b(Always|OnFailure|Never|ExitCode)\b", description.split("Default")[0])
    assert sorted(set(named)) == sorted(crds.RESTART_POLICIES)
    cr = ascendjob()
    cr["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    assert validate_cr(cr, upstream_crd) == []
    assert any("Sometimes" in e for e in validate_cr(cr, crds.ascendjob_crd()))


def test_strict_mode_catches_unknown_fields(upstream_crd: Dict[str, Any]) -> None:
    cr = ascendjob()
    cr["spec"]["runPolicy"]["backofLimit"] = 3  # typo
    assert any("backofLimit" in e for e in validate_cr(cr, upstream_crd))
    assert any("backofLimit" in e for e in validate_cr(cr, crds.ascendjob_crd()))
