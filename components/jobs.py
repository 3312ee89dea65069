"""``TrainingJobs``: per job its image build record, ConfigMaps (profile, reset-config,
rings-config) and the AscendJob or Volcano Job, from :func:`resumable.manifests.deployment.job_objects`
(what ``resumable render`` writes). Each job runs the image reference it is given: the runtime
image's digest, or a configured reference.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pulumi

from resumable.manifests.deployment import job_objects
from resumable.plan.model import Plan

from .kinds import create, logical_name, object_key

TYPE_TOKEN = "ascend-resumable:stack:TrainingJobs"
#: stands for the image reference while the objects are built; replaced by the Output
_IMAGE = "@@resumable:image@@"


def substitute(node: Any, value: Any) -> Any:
    """``node`` with every occurrence of the placeholder string replaced by ``value``."""
    if node == _IMAGE:
        return value
    if isinstance(node, dict):
        return {k: substitute(v, value) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute(v, value) for v in node]
    if isinstance(node, str) and _IMAGE in node:
        return pulumi.Output.from_input(value).apply(lambda ref: node.replace(_IMAGE, ref))
    return node


@dataclasses.dataclass
class TrainingJobsArgs:
    """Inputs of :class:`TrainingJobs`."""

    plan: Plan
    #: the image reference each job runs, by job name
    images: Dict[str, pulumi.Input[str]]
    #: the profile's text for the ConfigMap ``resumable launch`` reads in the pod
    profile_text: str
    #: what every job object waits for (the scheduling stack with its CRDs and operator, the
    #: storage claims); components here stand for all their children
    after: List[pulumi.Resource] = dataclasses.field(default_factory=list)


class TrainingJobs(pulumi.ComponentResource):
    """The training jobs of the plan as custom resources (deleted by ``pulumi destroy``)."""

    jobs: pulumi.Output[List[str]]

    def __init__(self, name: str, args: TrainingJobsArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.resources: Dict[str, pulumi.CustomResource] = {}
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        keys: List[str] = []
        for job in args.plan.jobs:
            if job.name not in args.images:
                raise pulumi.RunError(f"TrainingJobs {name}: no image reference for job {job.name}")
            objects = job_objects(args.plan, job, _IMAGE, args.profile_text)
            config_maps: List[pulumi.Resource] = []
            for obj in objects:
                key = object_key(obj)
                # the pods mount the ConfigMaps at start: create them before the job
                depends = config_maps if obj["kind"] != "ConfigMap" else []
                options = pulumi.ResourceOptions(parent=self, depends_on=[*args.after, *depends])
                resource = create(logical_name(name, key), substitute(obj, args.images[job.name]), options)
                self.resources[key] = resource
                self.child_options[key] = options
                if obj["kind"] == "ConfigMap":
                    config_maps.append(resource)
                else:
                    keys.append(key)
        self.jobs = pulumi.Output.from_input(keys)
        self.register_outputs({"jobs": self.jobs})
