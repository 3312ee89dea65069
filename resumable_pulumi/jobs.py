"""``TrainingJobs``: per job its image build record, ConfigMaps (profile, reset-config,
rings-config) and the AscendJob or Volcano Job, from :func:`resumable.manifests.deployment.job_objects`
(what ``resumable render`` writes). Each job runs the image reference it is given: the runtime
image's digest, or a configured reference.

- A job waits only for what it needs: the CRDs, operator and scheduler (``after``), its own claims and
  its ConfigMaps; never the node agents, so one node that cannot run a DaemonSet holds back no job.
- The ConfigMaps MindCluster writes while the job runs (``reset-config-<job>``: the device plugin's
  fault/recovery state; ``rings-config-<job>``: the Volcano plugin's RankTable) are created with
  their initial content and their ``data`` is then theirs (``ignore_changes``): a refresh followed
  by an ``up`` never resets them under a running job.
- With a registry login, a ``kubernetes.io/dockerconfigjson`` Secret ``<job>-registry`` is created
  beside each job and its training pods name it in ``imagePullSecrets``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import pulumi

from resumable.constants import RESET_CONFIG_PREFIX, RINGS_CONFIG_PREFIX
from resumable.errors import ResumableError
from resumable.manifests.deployment import job_objects, job_profile_texts
from resumable.plan.model import Plan

from .kinds import create, logical_name, object_key, pull_secret

TYPE_TOKEN = "ascend-resumable:stack:TrainingJobs"
#: ConfigMaps whose ``data`` MindCluster owns once the job runs
RUNTIME_WRITTEN = (RESET_CONFIG_PREFIX, RINGS_CONFIG_PREFIX)
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


def pull_secret_name(job: str) -> str:
    """The registry Secret a job's pods pull with (one per job, so stacks never share it)."""
    return f"{job}-registry"


def runtime_written(obj: Dict[str, Any]) -> bool:
    return obj["kind"] == "ConfigMap" and str(obj["metadata"]["name"]).startswith(RUNTIME_WRITTEN)


def with_pull_secret(node: Any, secret: str) -> Any:
    """``node`` with ``imagePullSecrets: [{name: secret}]`` added to every pod template's spec."""
    if isinstance(node, list):
        return [with_pull_secret(v, secret) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_pull_secret(v, secret) for k, v in node.items()}
    spec = out.get("spec")
    if "template" not in out and isinstance(spec, dict) and "containers" in spec:
        names = [s for s in spec.get("imagePullSecrets") or [] if s.get("name") != secret]
        out["spec"] = {**spec, "imagePullSecrets": [*names, {"name": secret}]}
    return out


@dataclasses.dataclass
class TrainingJobsArgs:
    """Inputs of :class:`TrainingJobs`."""

    plan: Plan
    #: the image reference each job runs, by job name
    images: Dict[str, pulumi.Input[str]]
    #: the profile's text; each job's profile ConfigMap (what ``resumable launch`` reads in the pod)
    #: gets that job alone from it (:func:`resumable.manifests.deployment.job_profile_texts`)
    profile_text: str
    #: what every job object waits for (the scheduling stack with its CRDs and operator, the
    #: storage claims); components here stand for all their children
    after: List[pulumi.Resource] = dataclasses.field(default_factory=list)
    #: the claims each job mounts, by job name (the job waits for its own only)
    claims: Dict[str, List[pulumi.Resource]] = dataclasses.field(default_factory=dict)
    #: the ``.dockerconfigjson`` the training pods pull with, when the registry needs a login
    pull_secret: Optional[pulumi.Input[str]] = None


class TrainingJobs(pulumi.ComponentResource):
    """The training jobs of the plan as custom resources (deleted by ``pulumi destroy``)."""

    jobs: pulumi.Output[List[str]]

    def __init__(self, name: str, args: TrainingJobsArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.resources: Dict[str, pulumi.CustomResource] = {}
        self.child_options: Dict[str, pulumi.ResourceOptions] = {}
        created: List[pulumi.CustomResource] = []
        secrets = self._pull_secrets(name, args)
        try:
            texts = job_profile_texts(args.plan, args.profile_text)
        except ResumableError as exc:  # the profile file changed since it was planned
            raise pulumi.RunError(str(exc)) from None
        for job in args.plan.jobs:
            if job.name not in args.images:
                raise pulumi.RunError(f"TrainingJobs {name}: no image reference for job {job.name}")
            objects = job_objects(args.plan, job, _IMAGE, texts[job.name])
            config_maps: List[pulumi.Resource] = []
            for obj in objects:
                key = object_key(obj)
                if obj["kind"] != "ConfigMap" and args.pull_secret is not None:
                    obj = with_pull_secret(obj, pull_secret_name(job.name))
                # the pods mount the ConfigMaps at start: create them before the job
                if obj["kind"] == "ConfigMap":
                    depends: List[pulumi.Resource] = []
                else:
                    depends = [*config_maps, *args.claims.get(job.name, []), *secrets.get(job.name, [])]
                options = pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[*args.after, *depends],
                    ignore_changes=["data"] if runtime_written(obj) else None,
                )
                resource = create(logical_name(name, key), substitute(obj, args.images[job.name]), options)
                self.resources[key] = resource
                self.child_options[key] = options
                if obj["kind"] == "ConfigMap":
                    config_maps.append(resource)
                else:
                    created.append(resource)
        # the jobs as the cluster has them: Kind/namespace/name read from the created objects
        self.jobs = pulumi.Output.all(
            *[
                pulumi.Output.all(r.kind, r.metadata["namespace"], r.metadata["name"]).apply(  # type: ignore[attr-defined]
                    lambda m: f"{m[0]}/{m[1]}/{m[2]}"
                )
                for r in created
            ]
        )
        self.register_outputs({"jobs": self.jobs})

    def _pull_secrets(self, name: str, args: TrainingJobsArgs) -> Dict[str, List[pulumi.Resource]]:
        """One Secret per job (``<job>-registry`` in its namespace): job stacks sharing a namespace
        never create the same object."""
        if args.pull_secret is None:
            return {}
        out: Dict[str, List[pulumi.Resource]] = {}
        for job in args.plan.jobs:
            obj = pull_secret(pull_secret_name(job.name), job.namespace, args.pull_secret)
            key = object_key(obj)
            options = pulumi.ResourceOptions(parent=self)
            self.resources[key] = create(logical_name(name, key), obj, options)
            self.child_options[key] = options
            out[job.name] = [self.resources[key]]
        return out
