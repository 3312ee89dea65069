"""``MindClusterScheduler``: the MindCluster scheduling stack of one plan, as Pulumi resources.

The objects come from :func:`resumable.manifests.build_stages` (the same builders ``resumable render``
uses), in the documented install order: namespaces -> CRDs -> Volcano -> Ascend Operator ->
ClusterD -> device plugin, NodeD, NPU Exporter. Every resource of a stage ``depends_on`` every
resource of the stage before it (INST05, INST06, INST08). Providers come from ``opts`` (the
program's top level makes them); this component never creates one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pulumi

from resumable.constants import (
    CLUSTERD_GRPC_PORT,
    CLUSTERD_SERVICE,
    NAMESPACE_DEVICE_PLUGIN,
    NAMESPACE_MINDX_DL,
    NAMESPACE_NPU_EXPORTER,
    NAMESPACE_VOLCANO,
)
from resumable.errors import ResumableError
from resumable.manifests import Stage, build_stages
from resumable.plan.model import SchedulerPlan

from .kinds import constructor_kwargs, resource_class

TYPE_TOKEN = "ascend-resumable:stack:MindClusterScheduler"
#: Namespaces whose pods pull MindCluster/Volcano images (pull secrets are created in each).
POD_NAMESPACES = (NAMESPACE_VOLCANO, NAMESPACE_MINDX_DL, NAMESPACE_DEVICE_PLUGIN, NAMESPACE_NPU_EXPORTER)


@dataclasses.dataclass
class MindClusterSchedulerArgs:
    """Inputs of :class:`MindClusterScheduler`."""

    #: the scheduler part of the plan (``resumable.plan.build.build_plan(profile).scheduler``)
    scheduler: SchedulerPlan
    #: the user's copies of the release files whose CRDs to deploy verbatim instead of the trimmed
    #: ones (``ascend-operator-v<ver>.yaml``, ``volcano-v<x>.yaml``)
    crd_sources: Optional[List[str]] = None
    #: full image references by component name (``device-plugin``, ``noded``, ...)
    images: Optional[Dict[str, str]] = None
    #: ``.dockerconfigjson`` content; with it, a Secret named after the plan's first
    #: ``image_pull_secrets`` entry is created in every namespace the stack runs pods in
    docker_config_json: Optional[pulumi.Input[str]] = None


def object_key(obj: Dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{obj['kind']}/{namespace}/{meta['name']}" if namespace else f"{obj['kind']}/{meta['name']}"


class MindClusterScheduler(pulumi.ComponentResource):
    """Volcano + Ascend plugin, Ascend Operator (AscendJob CRD), ClusterD, device plugin, NodeD and
    NPU Exporter for one MindCluster release, configured from the plan."""

    clusterd_endpoint: pulumi.Output[str]
    volcano_plugin: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: MindClusterSchedulerArgs,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        try:
            stages = build_stages(args.scheduler, crd_sources=args.crd_sources, images=args.images)
        except ResumableError as exc:  # unsupported plan or unreadable CRD source: fail the preview
            raise pulumi.RunError(f"MindClusterScheduler {name}: {exc}") from None
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.stages: List[Stage] = stages
        #: every child by ``Kind/namespace/name``
        self.resources: Dict[str, pulumi.CustomResource] = {}
        #: the options each child was created with (for tests and reviews of the wiring)
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        previous: List[pulumi.Resource] = []
        for index, stage in enumerate(stages):
            created: List[pulumi.Resource] = [self._create(name, obj, previous) for obj in stage.objects]
            if index == 0 and args.docker_config_json is not None:
                created += self._pull_secrets(name, args, created)
            previous = created
        self.clusterd_endpoint = pulumi.Output.from_input(
            f"{CLUSTERD_SERVICE}.{NAMESPACE_MINDX_DL}.svc:{CLUSTERD_GRPC_PORT}"
        )
        self.volcano_plugin = pulumi.Output.from_input(args.scheduler.volcano_plugin_name)
        self.register_outputs(
            {
                "clusterd_endpoint": self.clusterd_endpoint,
                "volcano_plugin": self.volcano_plugin,
                "objects": [object_key(obj) for stage in stages for obj in stage.objects],
            }
        )

    def _create(self, name: str, obj: Dict[str, Any], depends_on: List[pulumi.Resource]) -> pulumi.CustomResource:
        key = object_key(obj)
        options = pulumi.ResourceOptions(parent=self, depends_on=list(depends_on))
        cls = resource_class(obj["kind"])
        logical = f"{name}-{key.replace('/', '-').lower()}"
        resource = cls(logical, opts=options, **constructor_kwargs(obj))
        self.resources[key] = resource
        self.child_options[key] = options
        return resource

    def _pull_secrets(
        self, name: str, args: MindClusterSchedulerArgs, namespaces: List[pulumi.Resource]
    ) -> List[pulumi.CustomResource]:
        if not args.scheduler.image_pull_secrets:
            raise pulumi.RunError(
                f"MindClusterScheduler {name}: docker_config_json is set but the plan has no "
                "image_pull_secrets; name the secret in scheduler.image_pull_secrets"
            )
        secret_name = args.scheduler.image_pull_secrets[0]
        content = pulumi.Output.secret(args.docker_config_json)
        out = []
        for namespace in POD_NAMESPACES:
            obj = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret_name, "namespace": namespace},
                "type": "kubernetes.io/dockerconfigjson",
                "stringData": {".dockerconfigjson": content},
            }
            out.append(self._create(name, obj, namespaces))
        return out
