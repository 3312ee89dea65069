"""``SharedStorage``: the namespaces of the jobs and the shared volumes their pods mount.

Objects from :func:`resumable.manifests.storage.objects` and
:func:`resumable.manifests.deployment.workload_namespaces` (what ``resumable render`` writes).
Claims, volumes and namespaces are ``retain_on_delete``: ``pulumi destroy`` never takes the compile
cache or the checkpoints with it (docs/pulumi.md says how to remove them on purpose). The program
hands this component the provider that upserts (resumable_pulumi/program.py ``providers``): a job removed
and added back, or a stack destroyed and brought up again, finds its kept claim and volume and takes
them over instead of failing with AlreadyExists; they are replaced delete-before-create, so an
upsert is never followed by a delete of the object it took over. Every name comes from the job and
the purpose (resumable/plan/storage.py), so adding a job changes no existing object.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import pulumi

from resumable.manifests import storage
from resumable.manifests.deployment import workload_namespaces
from resumable.plan.model import Plan

from .kinds import create, logical_name, object_key

TYPE_TOKEN = "ascend-resumable:stack:SharedStorage"


@dataclasses.dataclass
class SharedStorageArgs:
    """Inputs of :class:`SharedStorage`."""

    #: the plan (its ``storage`` volumes and the namespaces of its ``jobs``)
    plan: Plan
    #: keep namespaces, volumes and claims on ``pulumi destroy``
    retain_on_delete: bool = True


class SharedStorage(pulumi.ComponentResource):
    """PersistentVolumes (NFS) and ReadWriteMany claims for the compile cache, checkpoints and the
    RankTable directory, one claim per job namespace; exports the claim names the jobs mount."""

    claims: pulumi.Output[List[str]]
    #: ``job name -> [claim resources]`` (what each job mounts)
    claims_by_job: Dict[str, List[pulumi.Resource]]

    def __init__(self, name: str, args: SharedStorageArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.resources: Dict[str, pulumi.CustomResource] = {}
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        namespaces = [self._create(name, obj, [], args) for obj in workload_namespaces(args.plan)]
        #: the job namespaces this component creates (the jobs' objects wait for them)
        self.namespaces: List[pulumi.Resource] = list(namespaces)
        objects = storage.objects(args.plan.storage)
        volumes = {
            o["metadata"]["name"]: self._create(name, o, namespaces, args)
            for o in objects
            if o["kind"] == "PersistentVolume"
        }
        claims: Dict[str, pulumi.CustomResource] = {}
        for obj in objects:
            if obj["kind"] == "PersistentVolumeClaim":
                bound = [volumes[obj["spec"]["volumeName"]]] if obj["spec"].get("volumeName") in volumes else []
                claims[object_key(obj)] = self._create(name, obj, namespaces + bound, args)
        self.claims_by_job = {}
        for job in args.plan.jobs:
            mounted = {f"PersistentVolumeClaim/{job.namespace}/{v.claim_name}" for v in job.volumes if v.claim_name}
            self.claims_by_job[job.name] = [claims[k] for k in sorted(mounted) if k in claims]
        # the claims as the cluster has them: namespace/name read from the created objects
        self.claims = pulumi.Output.all(
            *[
                pulumi.Output.all(c.metadata.namespace, c.metadata.name).apply(lambda m: f"{m[0]}/{m[1]}")  # type: ignore[attr-defined]
                for c in claims.values()
            ]
        )
        self.register_outputs({"claims": self.claims})

    def _create(
        self, name: str, obj: Dict[str, object], depends_on: List[pulumi.CustomResource], args: SharedStorageArgs
    ) -> pulumi.CustomResource:
        key = object_key(obj)
        options = pulumi.ResourceOptions(
            parent=self,
            depends_on=list(depends_on),
            retain_on_delete=args.retain_on_delete or None,
            delete_before_replace=True,
        )
        resource = create(logical_name(name, key), obj, options)
        self.resources[key] = resource
        self.child_options[key] = options
        return resource
