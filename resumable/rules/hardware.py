"""Hardware that can exist: chip x accelerator type x NPUs per node x sp-block, CPU architecture x
wheel platform, and MindCluster releases that exist."""

from __future__ import annotations

from typing import Iterable, List

from .. import hardware as H
from .. import releases as R
from .. import wheelfiles
from ..facts import JobFacts
from ..profile import Profile
from .base import WARNING, Finding, job_rule, profile_rule


@profile_rule(
    "mindcluster-release",
    "cluster.mindcluster names a MindCluster release",
    "%s; RN Version Compatibility" % H.RELEASES_SOURCE,
)
def mindcluster_release(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """Every feature gate compares the release with the first one that has the feature; a string
    that is no release (7.3.RC1: 7.3 came as 7.3.0) would be judged as the release it sorts next
    to and get that release's errors (an Elastic Agent for 7.3.RC1) instead of this one."""
    text = profile.cluster.mindcluster
    newer = H.newer_release(text) if text else None
    if newer is not None:
        yield Finding(
            ["cluster.mindcluster"],
            "MindCluster %s is newer than this ascend-resumable knows (it knows up to %s): its feature gates, "
            "manifests and known issues are not here, so nothing would be checked against them"
            % (text, H.MINDCLUSTER_RELEASES[-1]),
            "Upgrade ascend-resumable (pip install --upgrade ascend-resumable, or a newer checkout) to one that "
            "knows %s; or, to plan for a release it knows, write that one (this version deploys %s)."
            % (newer, ", ".join(R.STACK_RELEASES)),
        )
    elif text and H.release_base(text) is None:
        yield Finding(
            ["cluster.mindcluster"],
            "%r is not a MindCluster release (releases: %s; a service pack is written after its release, "
            "e.g. 7.3.0.SPC1); the checks that depend on the release wait until it is one"
            % (text, ", ".join(H.MINDCLUSTER_RELEASES)),
            "Write the release of the MindCluster packages the cluster runs (this project deploys %s)."
            % ", ".join(R.STACK_RELEASES),
        )


@profile_rule(
    "accelerator-type-chip",
    "The accelerator type is one MindCluster labels, with the chip family its NPUs carry",
    H.ACCELERATOR_SOURCE,
    warns=True,
)
def accelerator_type_chip(profile: Profile, facts: List[JobFacts]) -> Iterable[Finding]:
    """The jobs select nodes by accelerator-type and label themselves ring-controller.atlas with
    the chip; the operator and Volcano's Ascend plugin pick the chip's handler from that label,
    so a chip the nodes do not carry never schedules (or schedules with the wrong topology). An
    accelerator type MindCluster does not label matches no node; it is a warning (a vendor may add
    types), except for chip ascend-npu, whose labels are not listed here."""
    c = profile.cluster
    known = H.ACCELERATOR_TYPES.get(c.accelerator_type)
    if known is None:
        if c.chip != "ascend-npu":
            yield Finding(
                ["cluster.accelerator_type"],
                "accelerator type %r is not one MindCluster labels for chip %s (known: %s)"
                % (c.accelerator_type, c.chip, ", ".join(H.types_of(c.chip))),
                "Write the accelerator-type label your compute nodes carry (`kubectl get nodes -L accelerator-type`).",
                severity=WARNING,
            )
        return
    if known.chip != c.chip:
        yield Finding(
            ["cluster.chip", "cluster.accelerator_type"],
            "accelerator type %s (%s) has %s chips, not %s (%s)"
            % (known.label, known.products, known.chip, c.chip, H.CHIP_PRODUCTS.get(c.chip, c.chip)),
            "Set cluster.chip: %s, or the accelerator type of your nodes (for %s: %s)."
            % (known.chip, c.chip, ", ".join(H.types_of(c.chip)) or "not listed"),
        )


@job_rule(
    "npus-per-node-hardware", "A pod asks for NPUs its node has, in a count the chip allows", H.ACCELERATOR_SOURCE
)
def npus_per_node_hardware(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """One pod runs per node and takes npus_per_node NPUs; a node of module-910b-8 has 8, so a pod
    asking for 16 stays Pending for ever; A3 nodes give NPUs in pairs (YAMLCFG: even counts)."""
    known = H.ACCELERATOR_TYPES.get(profile.cluster.accelerator_type)
    n = f.job.npus_per_node
    if known is None or n in known.per_pod:
        return
    yield Finding(
        ["%s.npus_per_node" % f.path, "cluster.accelerator_type"],
        "npus_per_node %d is not a count a %s node (%s, %d NPUs) gives one pod (allowed: %s)"
        % (n, known.label, known.products, known.node_npus, ", ".join(str(x) for x in known.per_pod)),
        "Use one of those counts, or the accelerator type of the nodes the job runs on.",
    )


@job_rule(
    "sp-block-super-pod",
    "sp-block is for SuperPoD nodes",
    "YAMLCFG sp-block; HA73-AFFINITY Atlas 900 A3 SuperPoD; %s" % H.ACCELERATOR_SOURCE,
)
def sp_block_super_pod(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """sp-block divides a job into logical SuperPoDs; nodes that are not in a SuperPoD have none,
    and Volcano's SuperPoD placement refuses the job."""
    known = H.ACCELERATOR_TYPES.get(profile.cluster.accelerator_type)
    if f.job.sp_block is None or known is None or known.super_pod:
        return
    yield Finding(
        ["%s.sp_block" % f.path, "cluster.accelerator_type"],
        "sp_block is set, but %s (%s) nodes are not a SuperPoD" % (known.label, known.products),
        "Remove sp_block, or run the job on SuperPoD nodes (%s)."
        % ", ".join(a.label for a in H.ACCELERATOR_TYPES.values() if a.super_pod),
    )


@job_rule(
    "wheel-platform", "Vendor wheels are built for the cluster's CPU architecture", "PEP427 platform tag; PLR 构建镜像"
)
def wheel_platform(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """A wheel's platform tag names the CPU it runs on; pip refuses a linux_aarch64 wheel in an
    x86_64 image ("is not a supported wheel on this platform"), so the image build fails late."""
    arch = profile.cluster.arch
    for name, wheel in sorted(f.job.image.wheels.items()):
        location = wheel.file or wheel.url
        if not location:
            continue
        m = wheelfiles.platform_tag(location)
        wheel_arch = H.wheel_arch(m) if m else None
        if wheel_arch is not None and wheel_arch != arch:
            yield Finding(
                ["%s.image.wheels.%s" % (f.path, name), "cluster.arch"],
                "the %s wheel %s is built for %s, the cluster is %s"
                % (name, wheelfiles.base_name(location), wheel_arch, arch),
                "Use the %s wheel of the release package for %s (or correct cluster.arch)." % (name, arch),
            )
