"""The scheduler part of the plan: MindCluster release, Volcano build, resilience settings."""

from __future__ import annotations

from typing import List

from .. import releases as R
from ..facts import JobFacts, hot_reset_for, version_or_none
from ..profile import Profile
from ..versions import Version
from .model import Note, SchedulerPlan


def volcano_plugin_name(release: str, arch: str) -> str:
    """The Ascend plugin's name in the Volcano scheduler config, as the release build names the
    plugin and rewrites the config (build.sh: ``volcano-npu_<version>_linux-<arch>`` up to 7.3.0,
    ``volcano-npu_<version>`` from 7.3.1 and 26.0.0; :data:`~resumable.releases.VOLCANO_PLUGIN_WITHOUT_ARCH`).
    The scheduler loads the plugin by this name, so a wrong one loads no NPU plugin."""
    if R.at_least(Version(release), R.VOLCANO_PLUGIN_WITHOUT_ARCH):
        return "volcano-npu_v%s" % release
    return "volcano-npu_v%s_linux-%s" % (release, arch)


def build_scheduler(profile: Profile, facts: List[JobFacts]) -> SchedulerPlan:
    s = profile.scheduler
    cluster = profile.cluster
    release = version_or_none(cluster.mindcluster) or Version("0")
    stack = R.stack_release(release)
    volcano = s.volcano or R.default_volcano(release)
    hot_reset = hot_reset_for(profile, facts)
    notes: List[Note] = []
    if hot_reset is not None:
        notes.append(
            Note(
                "device plugin -hotReset=%d (%s)"
                % (hot_reset, "process-level recovery" if hot_reset == 2 else "as configured"),
                "INST04 step 4 / Table 3",
            )
        )
    longest = max((f.job.recovery.termination_grace_period or 0 for f in facts), default=0)
    notes.append(
        Note(
            "Volcano grace-over-time %ds; longest pod grace period %ds" % (s.grace_over_time, longest),
            "INST05 Table 3; YAMLCFG",
        )
    )
    pull_policy = s.image_pull_policy
    if pull_policy is None and s.image_registry:
        # the release manifests' Never means "loaded on every node"; images named by a registry are pulled
        pull_policy = "IfNotPresent"
        notes.append(
            Note(
                "stack images are pulled from %s (imagePullPolicy IfNotPresent; the release manifests' Never "
                "expects them loaded on every node, which a registry prefix does not do; set "
                "scheduler.image_pull_policy to choose)" % s.image_registry,
                "INST01 Preparing an Image",
            )
        )
    stack_version = stack.version if stack is not None else None
    return SchedulerPlan(
        release=cluster.mindcluster,
        stack_release=stack_version,
        arch=cluster.arch,
        kubernetes=cluster.kubernetes,
        container_runtime=cluster.container_runtime,
        volcano_version=volcano,
        volcano_plugin_name=volcano_plugin_name(stack_version or cluster.mindcluster, cluster.arch),
        image_registry=s.image_registry,
        image_pull_policy=pull_policy,
        image_pull_secrets=list(s.image_pull_secrets),
        image_os=s.image_os,
        grace_over_time=s.grace_over_time,
        hot_reset=hot_reset,
        list_watch_period=s.list_watch_period,
        report_interval=s.report_interval,
        resources={k: {str(name): q for name, q in v.items()} for k, v in s.resources.items()},
        notes=notes,
        queues=sorted({f.queue for f in facts}),
    )
