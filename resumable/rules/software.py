"""Launchers, ranktable, wheels and their versions."""

from __future__ import annotations

from typing import Iterable, Optional

from .. import releases as R
from ..facts import JobFacts, version_or_none
from ..profile import Profile
from ..versions import Version
from .base import WARNING, Finding, job_rule


@job_rule(
    "launcher-framework",
    "torchrun / torch_npu_run start PyTorch, msrun starts MindSpore",
    "RT04; RT05 Table 2",
)
def launcher_framework(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """The TaskD agent wraps torch's elastic agent for PyTorch and MindSpore's msrun for MindSpore."""
    launcher = f.job.launcher
    if (launcher == "msrun") == f.is_pytorch:
        yield Finding(
            ["%s.launcher" % f.path, "%s.image.framework" % f.path],
            "launcher %s does not start %s jobs" % (launcher, f.framework),
            "Use torchrun or torch_npu_run for PyTorch, msrun for MindSpore.",
        )


def _adapter_gate(f: JobFacts, above: str, what: str, path: str) -> Iterable[Finding]:
    paths = [path, "%s.image.torch_npu" % f.path, "%s.image.framework_pt_adapter" % f.path]
    if f.adapter is None:
        yield Finding(
            paths,
            "%s needs torch_npu newer than %s and the FrameworkPTAdapter release is not declared" % (what, above),
            "Declare image.framework_pt_adapter.",
            severity=WARNING,
        )
    elif f.adapter <= Version(above):
        yield Finding(
            paths,
            "%s needs torch_npu newer than %s, the image has %s" % (what, above, f.adapter),
            "Upgrade torch_npu.",
        )


@job_rule(
    "torch-npu-run-version",
    "torch_npu_run (Parallel Store) with torch 2.1+ needs torch_npu newer than 6.0.RC3",
    "RT05 Table 2",
)
def torch_npu_run_version(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torch_npu_run replaces torchrun's TCPStore with a multi-threaded one to cut communication init
    time; it exists in torch_npu newer than 6.0.RC3 for torch 2.1 and later."""
    if f.job.launcher == "torch_npu_run" and f.is_pytorch:
        yield from _adapter_gate(f, R.PARALLEL_STORE_ADAPTER_ABOVE, "torch_npu_run", "%s.launcher" % f.path)


@job_rule("ranktable-adapter", "RankTable mode needs torch_npu newer than 6.0.RC3", "RT05 Table 4")
def ranktable_adapter(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """PyTorch reads RANK_TABLE_FILE for communication init only from torch_npu newer than 6.0.RC3."""
    if f.job.ranktable and f.is_pytorch:
        yield from _adapter_gate(f, R.RANKTABLE_ADAPTER_ABOVE, "ranktable mode", "%s.ranktable" % f.path)


@job_rule(
    "wheel-release-match",
    "TaskD and MindIO wheels match the cluster release",
    "RN Version Compatibility; RT04 prerequisites",
    severity=WARNING,
)
def wheel_release_match(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """TaskD and MindIO talk to ClusterD over gRPC; all MindCluster pieces must be the same release."""
    img = f.job.image
    for name in ("taskd", "mindio_ttp", "mindio_acp", "mindx_elastic"):
        value: Optional[str] = getattr(img, name)
        v = version_or_none(value)
        if v is not None and v.release != f.release.release:
            yield Finding(
                ["%s.image.%s" % (f.path, name), "cluster.mindcluster"],
                "%s wheel %s does not match MindCluster %s" % (name, value, f.release),
                "Use the %s wheel from the %s release package." % (name, f.release),
            )


@job_rule(
    "mindio-acp",
    "MindIO ACP needs MindCluster 6.0.RC2+, its wheel, and MindSpore 2.7.0+ for MindSpore",
    R.MINDIO_ACP.source + "; ACP 02",
)
def mindio_acp(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Asynchronous checkpoint persistence (MindIO ACP) shortens the save stall and so allows a
    shorter checkpoint interval; it has release and framework floors."""
    if not f.job.checkpoint.mindio_acp:
        return
    where = "%s.checkpoint.mindio_acp" % f.path
    if not f.at_least(R.MINDIO_ACP):
        yield Finding(
            [where, "cluster.mindcluster"],
            "MindIO ACP needs MindCluster %s or later" % R.MINDIO_ACP.since,
            "Upgrade MindCluster or turn checkpoint.mindio_acp off.",
        )
    if f.job.image.mindio_acp is None:
        yield Finding(
            [where, "%s.image.mindio_acp" % f.path],
            "checkpoint.mindio_acp is on but the image has no mindio_acp wheel",
            "Declare image.mindio_acp.",
        )
    if not f.is_pytorch and (f.mindspore is None or f.mindspore < Version(R.ACP_MINDSPORE)):
        yield Finding(
            [where, "%s.image.mindspore" % f.path],
            "MindIO ACP with MindSpore needs MindSpore %s or later (image: %s)" % (R.ACP_MINDSPORE, f.mindspore),
            "Upgrade MindSpore or turn checkpoint.mindio_acp off.",
        )
    if f.job.image.mindspeed_llm is not None and (f.process_level or f.hot_switch):
        yield Finding(
            [where, "%s.recovery.strategies" % f.path],
            "in MindSpeed-LLM MindIO ACP and MindIO TFT (process-level recovery) cannot be used together",
            "Choose ACP or the process-level strategies for this MindSpeed-LLM job.",
            severity=WARNING,
        )
