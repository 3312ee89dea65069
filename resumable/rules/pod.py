"""The training pods' own settings (jobs[].pod): nothing in them may override what the recovery plan
sets, and each is what Kubernetes accepts."""

from __future__ import annotations

from typing import Dict, Iterable

from .. import constants as C
from ..facts import JobFacts
from ..formats import quantity_value
from ..profile import Profile
from .base import Finding, job_rule

#: Pod labels the recovery plan sets and the profile field that sets each (YAMLCFG; K8S Pod labels).
LABEL_OWNERS: Dict[str, str] = {
    C.LABEL_RING_CONTROLLER: "cluster.chip",
    C.LABEL_FRAMEWORK: "image.framework",
    C.LABEL_FAULT_SCHEDULING: "recovery.fault_scheduling",
    C.LABEL_FAULT_RETRY_TIMES: "recovery.fault_retry_times",
    C.LABEL_POD_RESCHEDULING: "recovery.pod_rescheduling",
    C.LABEL_PROCESS_RECOVER_ENABLE: "recovery.strategies",
    C.LABEL_SUB_HEALTHY_STRATEGY: "recovery.sub_health",
    C.LABEL_TOR_AFFINITY: "tor_affinity",
}
#: Annotations the plan sets (YAMLCFG; PLR 准备任务YAML).
ANNOTATION_OWNERS: Dict[str, str] = {
    C.ANNOTATION_RECOVER_STRATEGY: "recovery.strategies",
    C.ANNOTATION_WAIT_RESCHEDULE_TIMEOUT: "recovery.wait_reschedule_timeout",
    C.ANNOTATION_SCHEDULE_POLICY: "schedule_policy",
    C.ANNOTATION_SP_BLOCK: "sp_block",
}
#: Keys under this prefix are MindCluster's: the device plugin and the Volcano plugin write
#: huawei.com/ annotations on the pods they place (K8S Pod annotations).
MINDCLUSTER_PREFIX = "huawei.com/"
#: Node labels the plan's node selection uses (YAMLCFG nodeSelector).
NODE_SELECTOR_OWNERS: Dict[str, str] = {
    C.NODE_LABEL_HOST_ARCH: "cluster.arch",
    C.NODE_LABEL_ACCELERATOR_TYPE: "cluster.accelerator_type",
}


def owner(key: str, owners: Dict[str, str]) -> str:
    """The profile field that sets ``key``, or "" when the plan does not own it."""
    if key in owners:
        return owners[key]
    if key.startswith(MINDCLUSTER_PREFIX):
        return "MindCluster itself (the device plugin and Volcano write %s keys)" % MINDCLUSTER_PREFIX
    return ""


@job_rule(
    "pod-settings",
    "jobs[].pod adds to the training pods and overrides nothing the recovery plan sets",
    "YAMLCFG (labels, annotations, nodeSelector the jobs need); K8S Pod labels and annotations; KUBE core/v1",
)
def pod_settings(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A label, annotation or node label the plan sets decides how MindCluster treats the job
    (fault-scheduling, recover-strategy, the chip, the node type); a second value for it from
    jobs[].pod would silently replace the recovery the profile asked for, so it is refused, naming the
    field that sets it. Tolerations and limits are checked as the API server would check them."""
    pod = f.job.pod
    where = "%s.pod" % f.path
    for part, values, owners in (
        ("labels", pod.labels, LABEL_OWNERS),
        ("annotations", pod.annotations, ANNOTATION_OWNERS),
        ("node_selector", pod.node_selector, NODE_SELECTOR_OWNERS),
    ):
        for key in values:
            field_ = owner(key, owners)
            if field_:
                paths = ["%s.%s.%s" % (where, part, key)]
                if "." in field_ and " " not in field_:
                    paths.append(field_ if field_.startswith("cluster.") else "%s.%s" % (f.path, field_))
                yield Finding(
                    paths,
                    "%s %s is the recovery plan's (set from %s); jobs[].pod may not override it" % (part, key, field_),
                    "Remove it from %s.%s and set %s instead." % (where, part, field_),
                )
    for i, t in enumerate(pod.tolerations):
        at = "%s.tolerations[%d]" % (where, i)
        if t.operator == "Exists" and t.value is not None:
            yield Finding([at + ".value"], "a toleration with operator Exists has no value", "Remove value.")
        if t.key is None and t.operator != "Exists":
            yield Finding([at + ".key"], "a toleration without a key needs operator Exists", "Give key or Exists.")
        if t.toleration_seconds is not None and t.effect != "NoExecute":
            yield Finding(
                [at + ".toleration_seconds"],
                "toleration_seconds applies to effect NoExecute only",
                "Set effect NoExecute or remove toleration_seconds.",
            )
    for name, request in pod.requests.items():
        limit = pod.limits.get(name)
        if limit is not None and quantity_value(limit) < quantity_value(request):
            yield Finding(
                ["%s.limits.%s" % (where, name), "%s.requests.%s" % (where, name)],
                "limit %s %s is below the request %s" % (name, limit, request),
                "Give a limit at least the request.",
            )
