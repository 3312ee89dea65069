"""Which plans this stack can deploy; anything else fails before a resource is created.

``check_supported`` is pure, so ``resumable render`` (exit 2, one paragraph) and the Pulumi
component (error at preview) refuse the same plans with the same message.
"""

from __future__ import annotations

from typing import Iterable, List, Optional

from .. import constants as C
from ..choices import Arch, ContainerRuntime, HotReset, PullPolicy, values
from ..errors import ResumableError
from ..plan.model import SchedulerPlan
from ..plan.scheduler import volcano_plugin_name
from ..releases import STACK_RELEASES, deployability
from ..versions import Version, VersionError
from .settings import COMPONENTS


class UnsupportedStack(ResumableError):
    """The plan asks for a scheduling stack this project cannot deploy."""


def _fail(field: str, value: object, allowed: str, fix: str) -> UnsupportedStack:
    return UnsupportedStack(f"{field} = {value!r} is not supported (allowed: {allowed})", "scheduler", fix)


def _one_of(field: str, value: object, allowed: Iterable[object], fix: str) -> Optional[UnsupportedStack]:
    choices = list(allowed)
    if value not in choices:
        return _fail(field, value, ", ".join(str(c) for c in choices), fix)
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
    """Every reason the stack cannot be built, first the release (the rest depends on it).

    A plan from :func:`resumable.api.load_plan` passed the same checks as profile rules; this
    guards plans built by hand (Pulumi programs, tests)."""
    try:
        release = Version(plan.release)
        kube: Optional[Version] = Version(plan.kubernetes)
    except VersionError as exc:
        return [_fail("release/kubernetes", exc, "versions like 7.3.0 and 1.28", "Fix the plan's versions")]
    deploy = deployability(release, plan.volcano_version, kube)
    releases = [p for p in deploy if p.kind == "release"]
    if releases or plan.stack_release not in STACK_RELEASES:
        first = releases[0] if releases else None
        return [
            UnsupportedStack(
                first.message if first else "release %r has no deployable manifests" % plan.release,
                "scheduler",
                first.fix if first else "Use a supported MindCluster release",
            )
        ]
    found: List[Optional[UnsupportedStack]] = [UnsupportedStack(p.message, "scheduler", p.fix) for p in deploy]
    found += [
        _one_of("arch", plan.arch, values(Arch), "Set cluster.arch to aarch64 or x86_64"),
        _one_of(
            "container_runtime",
            plan.container_runtime,
            values(ContainerRuntime),
            "Use containerd or docker; iSula and CRI-O are not covered by the manifests this stack follows",
        ),
    ]
    expected_plugin = volcano_plugin_name(plan.stack_release or plan.release, plan.arch)
    if plan.volcano_plugin_name != expected_plugin:
        found.append(
            _fail(
                "volcano_plugin_name",
                plan.volcano_plugin_name,
                expected_plugin,
                "The scheduler loads the plugin by this name; it must match the release and arch of the "
                "vc-scheduler image",
            )
        )
    if plan.image_pull_policy is not None:
        found.append(
            _one_of(
                "image_pull_policy", plan.image_pull_policy, values(PullPolicy), "Use Always, IfNotPresent or Never"
            )
        )
    unknown = sorted(set(plan.resources) - set(COMPONENTS))
    if unknown:
        found.append(_fail("resources", ", ".join(unknown), ", ".join(COMPONENTS), "Key resources by component name"))
    for component, limits in sorted(plan.resources.items()):
        extra = sorted(set(limits) - {"cpu", "memory"})
        if extra:
            found.append(_fail(f"resources.{component}", ", ".join(extra), "cpu, memory", "Give cpu and memory only"))
    if plan.hot_reset is not None:
        found.append(_one_of("hot_reset", plan.hot_reset, values(HotReset), "Use 2 for process-level recovery"))
    for field, value, (low, high) in (
        ("grace_over_time", plan.grace_over_time, C.RANGE_GRACE_OVER_TIME),
        ("list_watch_period", plan.list_watch_period, C.RANGE_LIST_WATCH_PERIOD),
        ("report_interval", plan.report_interval, C.RANGE_REPORT_INTERVAL),
    ):
        found.append(_int_in(field, value, low, high, "Keep it within the component's documented range"))
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
