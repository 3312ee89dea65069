"""``MindClusterScheduler``: the MindCluster scheduling stack of one plan, as Pulumi resources.

The objects come from :func:`resumable.manifests.build_stages` (the same builders ``resumable render``
uses), in the documented install order: namespaces -> CRDs -> Volcano -> Ascend Operator ->
ClusterD -> device plugin, NodeD, NPU Exporter. Every resource of a stage ``depends_on`` every
resource of the stage before it (INST05, INST06, INST08). Providers come from ``opts`` (the
program's top level makes them); this component never creates one.

Lifecycle decisions (docs/pulumi.md):

- Namespaces and CRDs are ``retain_on_delete``: ``pulumi destroy`` must not delete every AscendJob
  and Volcano Job in the cluster with their CRD, nor a namespace with what others put in it.
- Objects upstream only renamed between releases (the device plugin's ``-910`` suffix dropped in
  26.1) carry an alias to their old name, so an upgrade replaces them in the same URN; the
  DaemonSet is replaced delete-before-create, so no node runs two device plugins.
- Deployments wait at most ``ready_timeout`` seconds for readiness and DaemonSets
  ``daemonset_timeout`` (their rollout visits every node), so a cluster whose nodes are not
  labelled or whose images are not loaded fails in minutes, not after the provider's 10-minute
  default, with the provider's message naming the unschedulable pods.
- Namespaces, CRDs and queues (the kept kinds) are replaced delete-before-create: a create is a
  server-side apply that takes a kept object over (resumable_pulumi/program.py ``provider``), and
  must never be followed by the delete of the object it took over.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pulumi

from resumable import releases as R
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
from resumable.manifests.device_plugin import names as device_plugin_names
from resumable.plan.model import SchedulerPlan
from resumable.traits import traits

from .kinds import create, logical_name, object_key, pull_secret

TYPE_TOKEN = "ascend-resumable:stack:MindClusterScheduler"
#: Namespaces whose pods pull MindCluster/Volcano images (pull secrets are created in each).
POD_NAMESPACES = (NAMESPACE_VOLCANO, NAMESPACE_MINDX_DL, NAMESPACE_DEVICE_PLUGIN, NAMESPACE_NPU_EXPORTER)
#: Kinds kept by ``pulumi destroy`` (see the module docstring): a Volcano queue holds other stacks'
#: jobs as a namespace holds their objects.
RETAINED_KINDS = ("Namespace", "CustomResourceDefinition", "Queue")
#: Kinds pulumi-kubernetes waits for until they are ready.
AWAITED_KINDS = ("Deployment", "DaemonSet")
#: What a training job needs before it is created: its CRD (every CRD of the stack), the controllers
#: that reconcile it and the scheduler that places its pods; never the node agents (DaemonSets),
#: so one node that cannot run them holds back no job.
JOB_PREREQUISITE_DEPLOYMENTS = (
    f"Deployment/{NAMESPACE_VOLCANO}/volcano-scheduler",
    f"Deployment/{NAMESPACE_VOLCANO}/volcano-controllers",
    f"Deployment/{NAMESPACE_MINDX_DL}/ascend-operator-manager",
)
#: The device plugin objects, in the order device_plugin.names() gives them.
_DEVICE_PLUGIN_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet")
_DEVICE_PLUGIN_NAMESPACES = (NAMESPACE_DEVICE_PLUGIN, "", "", NAMESPACE_DEVICE_PLUGIN)


def _key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def renamed_objects() -> Dict[str, str]:
    """``new key -> old key`` of the objects upstream renamed without other change: the device
    plugin's ServiceAccount, ClusterRole, binding and DaemonSet lost their ``-910`` suffix in 26.1
    (``ascendplugin-volcano.yaml`` at v26.0.0 vs v26.1.0; INST04): the names of the first release
    with :data:`~resumable.releases.MERGED_DEVICE_PLUGIN` against those of the stack release before it."""
    new = device_plugin_names(traits(R.MERGED_DEVICE_PLUGIN.since))
    old = device_plugin_names(traits(R.last_stack_release_without(R.MERGED_DEVICE_PLUGIN)))
    return {
        _key(kind, ns, n): _key(kind, ns, o)
        for kind, ns, n, o in zip(_DEVICE_PLUGIN_KINDS, _DEVICE_PLUGIN_NAMESPACES, new, old)
    }


@dataclasses.dataclass
class MindClusterSchedulerArgs:
    """Inputs of :class:`MindClusterScheduler`."""

    #: the scheduler part of the plan (``resumable.api.load_plan(path).scheduler``)
    scheduler: SchedulerPlan
    #: the user's copies of the release files whose CRDs to deploy verbatim instead of the trimmed
    #: ones (``ascend-operator-v<ver>.yaml``, ``volcano-v<x>.yaml``)
    crd_sources: Optional[List[str]] = None
    #: full image references by component name (``device-plugin``, ``noded``, ...)
    images: Optional[Dict[str, str]] = None
    #: ``.dockerconfigjson`` content; with it, a Secret named after the plan's first
    #: ``image_pull_secrets`` entry is created in every namespace the stack runs pods in
    docker_config_json: Optional[pulumi.Input[str]] = None
    #: keep namespaces and CRDs on ``pulumi destroy`` (set False, ``pulumi up``, then destroy to
    #: remove them on purpose)
    retain_on_delete: bool = True
    #: seconds Pulumi waits for each Deployment/DaemonSet to be ready; None: the provider default
    ready_timeout: Optional[int] = None
    #: seconds for each DaemonSet (a rollout visits every node); None: ``ready_timeout``
    daemonset_timeout: Optional[int] = None


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
        self.name = name
        self.args = args
        self.stages: List[Stage] = stages
        #: every child by ``Kind/namespace/name``
        self.resources: Dict[str, pulumi.CustomResource] = {}
        #: the options each child was created with (for tests and reviews of the wiring)
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        self._renamed = renamed_objects()
        previous: List[pulumi.Resource] = []
        for index, stage in enumerate(stages):
            created: List[pulumi.Resource] = [self._create(obj, previous) for obj in stage.objects]
            if index == 0 and args.docker_config_json is not None:
                created += self._pull_secrets(args, created)
            previous = created
        self.clusterd_endpoint = pulumi.Output.from_input(
            f"{CLUSTERD_SERVICE}.{NAMESPACE_MINDX_DL}.svc:{CLUSTERD_GRPC_PORT}"
        )
        self.volcano_plugin = pulumi.Output.from_input(args.scheduler.volcano_plugin_name)
        #: what the jobs wait for (see JOB_PREREQUISITE_DEPLOYMENTS)
        self.job_prerequisites: List[pulumi.Resource] = [
            r
            for key, r in self.resources.items()
            if key.startswith("CustomResourceDefinition/") or key in JOB_PREREQUISITE_DEPLOYMENTS
        ]
        #: the namespaces as the cluster has them (read from the created objects)
        self.namespaces = pulumi.Output.all(
            *[r.metadata.name for key, r in self.resources.items() if key.startswith("Namespace/")]  # type: ignore[attr-defined]
        )
        self.register_outputs(
            {
                "clusterd_endpoint": self.clusterd_endpoint,
                "volcano_plugin": self.volcano_plugin,
                "objects": [object_key(obj) for stage in stages for obj in stage.objects],
            }
        )

    def _options(self, key: str, kind: str, depends_on: List[pulumi.Resource]) -> pulumi.ResourceOptions:
        retain = self.args.retain_on_delete and kind in RETAINED_KINDS
        aliases: List[Any] = []
        old = self._renamed.get(key)
        if old is not None:
            aliases.append(pulumi.Alias(name=logical_name(self.name, old)))
        timeouts = None
        wait = self.args.daemonset_timeout if kind == "DaemonSet" else None
        wait = wait or self.args.ready_timeout
        if wait is not None and kind in AWAITED_KINDS:
            limit = f"{wait}s"
            timeouts = pulumi.CustomTimeouts(create=limit, update=limit)
        kept = kind in RETAINED_KINDS
        return pulumi.ResourceOptions(
            parent=self,
            depends_on=list(depends_on),
            retain_on_delete=retain or None,
            aliases=aliases or None,
            delete_before_replace=(old is not None and kind == "DaemonSet") or kept or None,
            custom_timeouts=timeouts,
        )

    def _create(self, obj: Dict[str, Any], depends_on: List[pulumi.Resource]) -> pulumi.CustomResource:
        key = object_key(obj)
        options = self._options(key, obj["kind"], depends_on)
        resource = create(logical_name(self.name, key), obj, options)
        self.resources[key] = resource
        self.child_options[key] = options
        return resource

    def _pull_secrets(self, args: MindClusterSchedulerArgs, namespaces: List[pulumi.Resource]) -> List[pulumi.Resource]:
        content = args.docker_config_json
        if content is None:
            return []
        if not args.scheduler.image_pull_secrets:
            raise pulumi.RunError(
                f"MindClusterScheduler {self.name}: docker_config_json is set but the plan has no "
                "image_pull_secrets; name the secret in scheduler.image_pull_secrets"
            )
        secret_name = args.scheduler.image_pull_secrets[0]
        out: List[pulumi.Resource] = []
        for namespace in POD_NAMESPACES:
            obj = pull_secret(secret_name, namespace, content)
            out.append(self._create(obj, namespaces))
        return out
