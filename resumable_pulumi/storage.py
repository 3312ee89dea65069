"""``SharedStorage``: the namespaces of the jobs and the shared volumes their pods mount.

Objects from :func:`resumable.manifests.storage.objects` and
:func:`resumable.manifests.deployment.workload_namespaces` (what ``resumable render`` writes).
Claims, volumes and namespaces are ``retain_on_delete``: ``pulumi destroy`` never takes the compile
cache or the checkpoints with it (docs/pulumi.md says how to remove them on purpose). A create is a
server-side apply (resumable_pulumi/program.py ``provider``): a job removed and added back, or a
stack destroyed and brought up again, finds its kept claim and volume and takes them over; they are
replaced delete-before-create, so a take-over is never followed by a delete of the object it took
over. Every name comes from the job and
the purpose (resumable/plan/storage.py), so adding a job changes no existing object.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import pulumi

from resumable.manifests import storage
from resumable.manifests.deployment import workload_namespaces
from resumable.manifests.k8s import LABEL_INSTANCE
from resumable.plan.model import Plan

from .kinds import create, logical_name, object_key

#: how long ``pulumi up`` waits for a Job that prepares the job directories on the export
PREPARE_TIMEOUTS = pulumi.CustomTimeouts(create="5m", update="5m")

TYPE_TOKEN = "ascend-resumable:stack:SharedStorage"


@dataclasses.dataclass
class SharedStorageArgs:
    """Inputs of :class:`SharedStorage`."""

    #: the plan (its ``storage`` volumes and the namespaces of its ``jobs``)
    plan: Plan
    #: keep namespaces, volumes and claims on ``pulumi destroy``
    retain_on_delete: bool = True


class SharedStorage(pulumi.ComponentResource):
    """PersistentVolumes (NFS) and ReadWriteMany claims for the compile cache and checkpoints, one
    claim per job namespace, and per job with NFS volumes the Job that creates their directories on
    the export (:func:`resumable.manifests.storage.prepare_jobs`); exports the claim names the jobs
    mount. ``claims_by_job`` holds what a job waits for: its claims and its prepare Job."""

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
        prepared: Dict[str, pulumi.CustomResource] = {}
        for obj in objects:
            if obj["kind"] == "PersistentVolumeClaim":
                bound = [volumes[obj["spec"]["volumeName"]]] if obj["spec"].get("volumeName") in volumes else []
                claims[object_key(obj)] = self._create(name, obj, namespaces + bound, args)
            elif obj["kind"] == "Job":
                # the job directories on the export: Pulumi waits for the Job to complete; one that fails
                # (its log names the directory and the fix) stops the jobs that would mount them
                job_name = obj["metadata"]["labels"].get(LABEL_INSTANCE, "")
                prepared[job_name] = self._create(name, obj, namespaces, args, PREPARE_TIMEOUTS)
        self.claims_by_job = {}
        for job in args.plan.jobs:
            mounted = {f"PersistentVolumeClaim/{job.namespace}/{v.claim_name}" for v in job.volumes if v.claim_name}
            waits: List[pulumi.Resource] = [claims[k] for k in sorted(mounted) if k in claims]
            self.claims_by_job[job.name] = waits + ([prepared[job.name]] if job.name in prepared else [])
        # the claims as the cluster has them: namespace/name read from the created objects
        self.claims = pulumi.Output.all(
            *[
                pulumi.Output.all(c.metadata.namespace, c.metadata.name).apply(lambda m: f"{m[0]}/{m[1]}")  # type: ignore[attr-defined]
                for c in claims.values()
            ]
        )
        self.register_outputs({"claims": self.claims})

    def _create(
        self,
        name: str,
        obj: Dict[str, object],
        depends_on: List[pulumi.CustomResource],
        args: SharedStorageArgs,
        timeouts: Optional[pulumi.CustomTimeouts] = None,
    ) -> pulumi.CustomResource:
        key = object_key(obj)
        options = pulumi.ResourceOptions(
            parent=self,
            depends_on=list(depends_on),
            retain_on_delete=args.retain_on_delete or None,
            delete_before_replace=True,
            custom_timeouts=timeouts,
        )
        resource = create(logical_name(name, key), obj, options)
        self.resources[key] = resource
        self.child_options[key] = options
        return resource
