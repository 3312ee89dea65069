"""Fault detection: the torch_npu / MindSpore watchdog."""

from __future__ import annotations

from typing import Iterable, List

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from ..profile import Profile
from .base import WARNING, Finding, job_rule


def _image_paths(f: JobFacts) -> List[str]:
    img = "%s.image" % f.path
    if f.is_pytorch:
        return [img + ".torch", img + ".torch_npu", img + ".framework_pt_adapter"]
    return [img + ".mindspore"]


def _software(f: JobFacts) -> str:
    if not f.is_pytorch:
        return "MindSpore %s" % f.mindspore
    return "torch %s, torch_npu %s (FrameworkPTAdapter: %s)" % (
        f.torch,
        f.job.image.torch_npu,
        f.adapter_info.how
        if f.adapter is None
        else "%s%s, from %s" % ("" if f.adapter_info.exact else "at least ", f.adapter, f.adapter_info.how),
    )


@job_rule(
    "watchdog-support",
    "The watchdog needs PyTorch 2.1.0+ with torch_npu newer than 6.0.RC1 (MindSpore 2.4+)",
    "RTO 表1; RT05 Table 1",
)
def watchdog_support(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torch_npu's watchdog thread exists only from PyTorch 2.1.0 with FrameworkPTAdapter newer than
    6.0.RC1 (MindSpore from 2.4); asking for it elsewhere silently leaves a fault waiting for the
    30-minute HCCL timeout. A torch_npu pip version is read through the published version table
    (PTA)."""
    if f.job.recovery.watchdog != "on" or f.watchdog_supported is not False:
        return
    if f.is_pytorch:
        yield Finding(
            [f.where("recovery.watchdog"), *_image_paths(f)],
            "watchdog is on but needs torch >= %s and torch_npu (FrameworkPTAdapter) newer than %s; the image "
            "has %s" % (R.WATCHDOG_TORCH.since, R.WATCHDOG_ADAPTER_ABOVE.since, _software(f)),
            "Upgrade the image (and declare image.torch and image.torch_npu), or set recovery.watchdog: auto.",
        )
    else:
        yield Finding(
            [f.where("recovery.watchdog"), *_image_paths(f)],
            "watchdog is on but MindSpore's HCCL watchdog needs MindSpore >= %s (profile: %s)"
            % (R.WATCHDOG_MINDSPORE.since, f.mindspore),
            "Upgrade MindSpore (and declare image.mindspore) or set recovery.watchdog: auto.",
        )


@job_rule(
    "watchdog-unknown",
    "Whether the image has the watchdog can be told from its declared versions",
    "RTO 表1; PTA",
    severity=WARNING,
)
def watchdog_unknown(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """With recovery.watchdog: auto the plan turns the watchdog neither on nor off unless it knows
    the image supports it; when the versions do not tell (torch_npu a pip version the published
    table does not list, or versions not declared) HCCL_ASYNC_ERROR_HANDLING is left unset, the
    vendor default, and the recovery budget assumes the 30-minute collective timeout. Never
    silently off: declare the versions, or acknowledge the warning."""
    if f.job.recovery.watchdog != "auto" or f.process_level or f.hot_switch or f.watchdog_supported is not None:
        return
    if f.is_pytorch:
        yield Finding(
            _image_paths(f),
            "cannot tell whether this image has the torch_npu watchdog (%s); %s is left unset (the vendor "
            "default) and the budget assumes the collective timeout" % (_software(f), C.ENV_HCCL_ASYNC_ERROR_HANDLING),
            "Declare image.torch and image.framework_pt_adapter (the FrameworkPTAdapter release of the image's "
            "torch_npu), or set recovery.watchdog: on/off, or acknowledge watchdog-unknown.",
        )
    else:
        yield Finding(
            _image_paths(f),
            "cannot tell whether this image has MindSpore's HCCL watchdog (MindSpore not declared); it is left "
            "at the vendor default",
            "Declare image.mindspore, or set recovery.watchdog: on/off, or acknowledge watchdog-unknown.",
        )


@job_rule(
    "watchdog-process-level",
    "The watchdog must be off with any process-level strategy or hot switching",
    "RT04 Table 3 (any strategy: HCCL_ASYNC_ERROR_HANDLING=0); RT01 strategy limits; RT05 Table 1",
)
def watchdog_process_level(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Process-level rescheduling, in-place and online recovery, elastic training and hot switching
    all pause and repair the job themselves; a watchdog that kills the processes on the first
    communication error defeats them. The operator injects HCCL_ASYNC_ERROR_HANDLING=0 from 7.2.
    The watchdog may be switched on by the field or by env (HCCL_ASYNC_ERROR_HANDLING=1,
    MS_ENABLE_THM={HCCL_WATCHDOG:1}); either way is this error."""
    if not (f.process_level or f.hot_switch) or f.job.recovery.watchdog != "on":
        return
    why = "recover-strategy %s" % ",".join(f.strategies) if f.process_level else "subHealthyStrategy hotSwitch"
    where = f.where("recovery.watchdog")
    yield Finding(
        [where, "%s.recovery.strategies" % f.path],
        "watchdog is on (%s) together with %s" % (where, why),
        "Set recovery.watchdog: auto (or off) and remove any env entry that turns it on; the plan exports %s=0."
        % C.ENV_HCCL_ASYNC_ERROR_HANDLING,
    )
