"""``SharedStorage``: the namespaces of the jobs and the shared volumes their pods mount.

Objects from :func:`resumable.manifests.storage.objects` and
:func:`resumable.manifests.deployment.workload_namespaces` (what ``resumable render`` writes).
Claims, volumes and namespaces are ``retain_on_delete``: ``pulumi destroy`` never takes the compile
cache or the checkpoints with it (docs/pulumi.md says how to remove them on purpose).
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

    def __init__(self, name: str, args: SharedStorageArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.resources: Dict[str, pulumi.CustomResource] = {}
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        namespaces = [self._create(name, obj, [], args) for obj in workload_namespaces(args.plan)]
        objects = storage.objects(args.plan.storage)
        volumes = [self._create(name, o, namespaces, args) for o in objects if o["kind"] == "PersistentVolume"]
        for obj in objects:
            if obj["kind"] == "PersistentVolumeClaim":
                self._create(name, obj, namespaces + volumes, args)
        keys = [object_key(o) for o in objects if o["kind"] == "PersistentVolumeClaim"]
        self.claims = pulumi.Output.from_input(keys)
        self.register_outputs({"claims": self.claims})

    def _create(
        self, name: str, obj: Dict[str, object], depends_on: List[pulumi.CustomResource], args: SharedStorageArgs
    ) -> pulumi.CustomResource:
        key = object_key(obj)
        options = pulumi.ResourceOptions(
            parent=self, depends_on=list(depends_on), retain_on_delete=args.retain_on_delete or None
        )
        resource = create(logical_name(name, key), obj, options)
        self.resources[key] = resource
        self.child_options[key] = options
        return resource
