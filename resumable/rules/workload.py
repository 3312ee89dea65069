"""The job template's own settings: user volumes, per-job topology labels and annotations."""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List

from .. import constants as C
from .. import releases as R
from ..errors import shown
from ..facts import JobFacts
from ..kubenames import has_backsteps
from ..profile import Profile
from .base import Finding, job_rule


def planned_mounts(f: JobFacts) -> Dict[str, str]:
    """Mount paths the plan gives every pod of the job, by what they hold."""
    job = f.job
    out = {
        "/dev/shm": "shared memory",
        C.DRIVER_PATH: "the NPU driver",
        C.LOCALTIME_PATH: "the host's time zone",
        C.PROFILE_MOUNT_DIR: "the resumable profile",
        job.checkpoint.path: "checkpoints",
    }
    if job.compile.mode == "cache":
        out[job.compile.cache_path] = "the compile cache"
    if job.ranktable or job.kind == "vcjob":
        out[C.RANKTABLE_MOUNT] = "the RankTable"
    out[C.RESET_CONFIG_MOUNT] = "the reset config"
    return out


@job_rule(
    "job-volumes",
    "Each user volume has one source, an absolute mount path and its own name and path",
    "RT06 steps 7/9 (code, data, output volumes); KUBE volumes; KAPI pkg/apis/core/validation/validation.go:1214",
)
def job_volumes(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A volume needs exactly one source (host_path, claim, config_map, secret or empty_dir); two
    volumes may not share a name or a mount path, none may take the name of a volume the plan gives
    the pods, and none may hide a path the plan mounts (driver, shm, cache, checkpoints, RankTable,
    reset-config, the profile), or the container would lose it."""
    planned = planned_mounts(f)
    names: List[str] = []
    paths: List[str] = []
    for i, v in enumerate(f.job.volumes):
        where = "%s.volumes[%d]" % (f.path, i)
        sources = [s for s in (v.host_path, v.claim, v.config_map, v.secret, v.empty_dir) if s is not None]
        if len(sources) != 1:
            yield Finding(
                [where],
                "volume %r needs exactly one of host_path, claim, config_map, secret or empty_dir" % v.name,
                "Give one of them.",
            )
        if v.name in C.PLANNED_VOLUMES:
            yield Finding(
                [where + ".name"],
                "volume name %r is the recovery plan's volume for %s" % (v.name, C.PLANNED_VOLUMES[v.name]),
                "Rename it (e.g. code, data, output).",
            )
        if v.host_path is not None and not posixpath.isabs(v.host_path):
            yield Finding([where + ".host_path"], "host_path %r is not absolute" % v.host_path, "Use an absolute path.")
        elif v.host_path is not None and has_backsteps(v.host_path):
            # the API server refuses the pod (KAPI pkg/apis/core/validation/validation.go:1214 validatePathNoBacksteps)
            yield Finding(
                [where + ".host_path"],
                "host_path %s contains '..', which the API server refuses in a hostPath" % shown(v.host_path),
                "Write the directory without '..' (e.g. %s)." % shown(posixpath.normpath(v.host_path)),
            )
        if not posixpath.isabs(v.mount_path) or posixpath.normpath(v.mount_path) != v.mount_path.rstrip("/"):
            yield Finding(
                [where + ".mount_path"],
                "mount_path %r is not a normalised absolute path" % v.mount_path,
                "Write it as /dir/sub without '..', '.' or double slashes.",
            )
            continue
        mount = v.mount_path.rstrip("/") or "/"
        if v.name in names or mount in paths:
            yield Finding([where], "volume %r repeats a name or mount path of another volume" % v.name, "Rename it.")
        for path, what in planned.items():
            if mount == path or path.startswith(mount + "/") or mount == "/":
                yield Finding(
                    [where + ".mount_path"],
                    "mount_path %s would hide %s mounted at %s" % (mount, what, path),
                    "Mount it elsewhere (e.g. /job/code, /job/data, /job/output).",
                )
        names.append(v.name)
        paths.append(mount)


@job_rule(
    "topology-release",
    "tor-affinity and sp-block need a release whose scheduler supports them",
    "%s; %s" % (R.TOR_AFFINITY.source, R.SP_BLOCK.source),
)
def topology_release(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Volcano ignores scheduling labels its Ascend plugin does not know; the job would be placed
    without the affinity the user asked for."""
    wanted = ((f.job.tor_affinity, R.TOR_AFFINITY, "tor_affinity"), (f.job.sp_block, R.SP_BLOCK, "sp_block"))
    for value, gate, field_ in wanted:
        if value is not None and not f.at_least(gate):
            yield Finding(
                ["%s.%s" % (f.path, field_), "cluster.mindcluster"],
                "%s needs MindCluster %s or later, the cluster runs %s" % (field_, gate.since, f.release),
                "Remove %s or upgrade MindCluster." % field_,
            )


@job_rule(
    "schedule-policy",
    "schedule_policy is a policy the release's Volcano plugin knows",
    "VCAPI Table 3; %s; %s" % tuple(t.source for t in R.SCHEDULE_POLICIES),
)
def schedule_policy(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The annotation huawei.com/schedule_policy picks the Volcano plugin's placement policy from a
    closed table; a value the table lacks is ignored without a word and the job placed by its
    accelerator type instead, so the topology the user asked for silently does not apply."""
    policy = f.job.schedule_policy
    if policy is None:
        return
    table = R.schedule_policies(f.release)
    if policy not in table.values:
        yield Finding(
            ["%s.schedule_policy" % f.path],
            "%s is not a schedule policy the Volcano plugin of MindCluster %s knows (its table: %s); the plugin "
            "would ignore it" % (shown(policy), f.release, table.source.split(", ")[0]),
            "Write one of %s (the chip and node count of your servers, e.g. chip8-node8 for Atlas 800T A2), "
            "or remove schedule_policy." % ", ".join(table.values),
        )


@job_rule(
    "sp-block-size",
    "sp-block divides the job's NPUs into whole logical SuperPoDs",
    "YAMLCFG sp-block; HA73-AFFINITY Atlas 900 A3 SuperPoD",
)
def sp_block_size(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The job's logical SuperPoD count is its NPU total divided by sp-block; a remainder cannot be
    placed, and a logical SuperPoD must hold whole nodes."""
    sp = f.job.sp_block
    if sp is None or sp < 1 or f.job.npus_per_node < 1 or f.job.nodes < 1:
        return  # value-range reports numbers below 1
    total = f.job.nodes * f.job.npus_per_node
    if total % sp or sp % f.job.npus_per_node:
        yield Finding(
            ["%s.sp_block" % f.path, "%s.nodes" % f.path, "%s.npus_per_node" % f.path],
            "sp_block %d must divide the job's %d NPUs and be a multiple of npus_per_node %d"
            % (sp, total, f.job.npus_per_node),
            "Choose an sp_block that is a multiple of npus_per_node and divides nodes x npus_per_node.",
        )


@job_rule(
    "vcjob-restart-policy",
    "restartPolicy ExitCode exists for AscendJob only",
    "YAMLCFG restartPolicy (ExitCode: not for vcjob)",
)
def vcjob_restart_policy(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A Volcano Job's pods take a plain Kubernetes restartPolicy (Always, OnFailure, Never); the
    API server rejects ExitCode there."""
    if f.job.kind == "vcjob" and f.job.recovery.restart_policy == "ExitCode":
        yield Finding(
            ["%s.recovery.restart_policy" % f.path, "%s.kind" % f.path],
            "restart_policy ExitCode is not valid for a Volcano Job",
            "Use Never (needed with fault_retry_times) or kind: ascendjob.",
        )


@job_rule(
    "vcjob-launch",
    "A Volcano Job runs no TaskD Manager: only the Ascend Operator gives pods the job id it registers",
    "MC:component/ascend-operator/pkg/controllers/v1/env.go setCommonEnv (MINDX_TASK_ID); TASKDAPI 04",
)
def vcjob_launch(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """``resumable launch`` starts a Volcano Job's pods from its RankTable, as the upstream vcjob
    scripts do (MCD: rank_table.sh), but the TaskD Manager registers the job with ClusterD under
    MINDX_TASK_ID, the job UID that only the Ascend Operator injects; a Volcano Job's pods have no
    field that carries it, so the Manager would register a job ClusterD does not know."""
    if f.job.kind == "vcjob" and f.taskd_manager_where != "none":
        yield Finding(
            ["%s.kind" % f.path, "%s.taskd_manager" % f.path],
            "the job runs the TaskD Manager (%s), which needs MINDX_TASK_ID, the job id only the Ascend Operator "
            "injects; a Volcano Job has none" % f.taskd_manager_where,
            "Use kind: ascendjob for TaskD recovery (Pod- or process-level rescheduling).",
        )
