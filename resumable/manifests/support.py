"""Which plans this stack can deploy; anything else fails before a resource is created.

``check_supported`` is pure, so ``resumable render`` (exit 2, one paragraph) and the Pulumi
component (error at preview) refuse the same plans with the same message.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional

from .. import constants as C
from ..errors import ResumableError
from ..plan.model import SchedulerPlan
from ..releases import KUBERNETES_MAX, KUBERNETES_MIN, STACK_RELEASES, VOLCANO_BUILDS, kubernetes_in_range
from ..versions import Version, VersionError
from .settings import COMPONENTS, PULL_POLICIES

ARCHES = ("aarch64", "x86_64")
CONTAINER_RUNTIMES = ("containerd", "docker")
HOT_RESET_VALUES = tuple(str(v) for v in C.HOT_RESET_VALUES)


class UnsupportedStack(ResumableError):
    """The plan asks for a scheduling stack this project cannot deploy."""


def _fail(field: str, value: object, allowed: str, fix: str) -> UnsupportedStack:
    return UnsupportedStack(f"{field} = {value!r} is not supported (allowed: {allowed})", "scheduler", fix)


def _one_of(field: str, value: object, allowed: Iterable[str], fix: str) -> Optional[UnsupportedStack]:
    allowed = list(allowed)
    if value not in allowed:
        return _fail(field, value, ", ".join(allowed), fix)
    return None


def _int_in(field: str, value: object, low: int, high: int, fix: str) -> Optional[UnsupportedStack]:
    try:
        number = int(str(value))
    except ValueError:
        return _fail(field, value, f"an integer {low}..{high}", fix)
    if not low <= number <= high:
        return _fail(field, value, f"{low}..{high}", fix)
    return None


def problems(plan: SchedulerPlan) -> List[UnsupportedStack]:
    """Every reason the stack cannot be built, first the release (the rest depends on it)."""
    releases = ", ".join(STACK_RELEASES)
    if plan.stack_release is None or plan.stack_release not in STACK_RELEASES:
        return [
            _fail(
                "release",
                plan.release,
                f"MindCluster {releases} and their service packs",
                "Set cluster.mindcluster to a release with deployable manifests, or install the stack "
                "by hand and use resumable only for the jobs",
            )
        ]
    stack = STACK_RELEASES[plan.stack_release]
    found: List[Optional[UnsupportedStack]] = [
        _one_of("arch", plan.arch, ARCHES, "Set cluster.arch to aarch64 or x86_64"),
        _one_of(
            "container_runtime",
            plan.container_runtime,
            CONTAINER_RUNTIMES,
            "Use containerd or docker; iSula and CRI-O are not covered by the manifests this stack follows",
        ),
        _one_of(
            "volcano_version",
            plan.volcano_version,
            stack.volcano,
            f"MindCluster {plan.stack_release} ships Volcano {', '.join(stack.volcano)}; pick one of them "
            f"(default {stack.default_volcano})",
        ),
    ]
    build = VOLCANO_BUILDS.get(plan.volcano_version)
    try:
        kube: Optional[Version] = Version(plan.kubernetes)
    except VersionError:
        kube = None
        found.append(_fail("kubernetes", plan.kubernetes, "a version like 1.28", "Set cluster.kubernetes"))
    if kube is not None and build is not None and not kubernetes_in_range(kube, build):
        found.append(
            _fail(
                "kubernetes",
                plan.kubernetes,
                f"{build.kubernetes_min}..{build.kubernetes_max} for Volcano {build.version}",
                "Choose the Volcano build that supports your Kubernetes (1.12.0 needs MindCluster 26.1.0) "
                "or upgrade Kubernetes",
            )
        )
    if kube is not None and not (
        Version(KUBERNETES_MIN).major_minor <= kube.major_minor <= Version(KUBERNETES_MAX).major_minor
    ):
        found.append(
            _fail(
                "kubernetes",
                plan.kubernetes,
                f"{KUBERNETES_MIN}..{KUBERNETES_MAX}",
                "Use a Kubernetes MindCluster supports",
            )
        )
    plugin = re.compile(r"^volcano-npu_v?%s_linux-%s$" % (re.escape(plan.release), re.escape(plan.arch)))
    if not plugin.match(plan.volcano_plugin_name) and not re.match(
        r"^volcano-npu_v?%s_linux-%s$" % (re.escape(plan.stack_release), re.escape(plan.arch)),
        plan.volcano_plugin_name,
    ):
        found.append(
            _fail(
                "volcano_plugin_name",
                plan.volcano_plugin_name,
                f"volcano-npu_{plan.release}_linux-{plan.arch}",
                "The scheduler loads the plugin by this name; it must match the release and arch of the "
                "vc-scheduler image",
            )
        )
    if plan.image_pull_policy is not None:
        found.append(
            _one_of(
                "image_pull_policy",
                plan.image_pull_policy,
                PULL_POLICIES,
                "Use Always, IfNotPresent or Never",
            )
        )
    unknown = sorted(set(plan.resources) - set(COMPONENTS))
    if unknown:
        found.append(_fail("resources", ", ".join(unknown), ", ".join(COMPONENTS), "Key resources by component name"))
    for component, values in sorted(plan.resources.items()):
        extra = sorted(set(values) - {"cpu", "memory"})
        if extra:
            found.append(_fail(f"resources.{component}", ", ".join(extra), "cpu, memory", "Give cpu and memory only"))
    for field, args in (("device_plugin_args", plan.device_plugin_args), ("noded_args", plan.noded_args)):
        for flag in sorted(args):
            if not re.match(r"^--?[A-Za-z][A-Za-z0-9-]*$", flag):
                found.append(_fail(f"{field}[{flag}]", flag, "flags like -hotReset", "Write flags with a leading '-'"))
    grace = plan.volcano_init_params.get(C.INIT_PARAM_GRACE_OVER_TIME, str(plan.grace_over_time))
    found.append(
        _int_in(
            "grace_over_time",
            grace,
            *C.RANGE_GRACE_OVER_TIME,
            "Volcano force-deletes pods after grace-over-time seconds; keep it within 2..3600 and no "
            "shorter than the jobs' terminationGracePeriodSeconds",
        )
    )
    if str(grace) != str(plan.grace_over_time):
        found.append(
            _fail(
                "volcano_init_params[grace-over-time]",
                grace,
                f"the plan's grace_over_time {plan.grace_over_time}",
                "Set the grace period in one place (the recovery settings) so Volcano and the jobs agree",
            )
        )
    for field, value, args_name, args, flag in (
        ("hot_reset", plan.hot_reset, "device_plugin_args", plan.device_plugin_args, C.FLAG_HOT_RESET),
        (
            "list_watch_period",
            plan.list_watch_period,
            "device_plugin_args",
            plan.device_plugin_args,
            C.FLAG_LIST_WATCH_PERIOD,
        ),
        ("report_interval", plan.report_interval, "noded_args", plan.noded_args, C.FLAG_REPORT_INTERVAL),
    ):
        if value is not None and args.get(flag) != str(value):
            found.append(
                _fail(
                    f"{args_name}[{flag}]",
                    args.get(flag),
                    f"the plan's {field} {value}",
                    "The plan contradicts itself; rebuild it with `resumable plan` (a bug if it came from there)",
                )
            )
    if C.FLAG_HOT_RESET in plan.device_plugin_args:
        found.append(
            _one_of(
                "device_plugin_args[-hotReset]",
                plan.device_plugin_args[C.FLAG_HOT_RESET],
                HOT_RESET_VALUES,
                "Use 2 for process-level recovery",
            )
        )
    for args_name, args, flag, (low, high) in (
        ("device_plugin_args", plan.device_plugin_args, C.FLAG_LIST_WATCH_PERIOD, C.RANGE_LIST_WATCH_PERIOD),
        ("noded_args", plan.noded_args, C.FLAG_REPORT_INTERVAL, C.RANGE_REPORT_INTERVAL),
    ):
        if flag in args:
            found.append(_int_in(f"{args_name}[{flag}]", args[flag], low, high, "Use 5 for resumable training"))
    return [p for p in found if p is not None]


def check_supported(plan: SchedulerPlan) -> None:
    """Raise :class:`UnsupportedStack` (one paragraph: field, value, allowed values, fix) for the
    first problem, mentioning how many more there are."""
    found = problems(plan)
    if not found:
        return
    first = found[0]
    if len(found) > 1:
        rest = "; ".join(str(p) for p in found[1:])
        raise UnsupportedStack(first.what, first.where, f"{(first.fix or '').rstrip('.')}. Also: {rest}")
    raise first
