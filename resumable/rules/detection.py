"""Fault detection: the torch_npu / MindSpore watchdog."""

from __future__ import annotations

from typing import Iterable

from .. import constants as C
from .. import releases as R
from ..facts import JobFacts
from ..profile import Profile
from .base import Finding, job_rule


@job_rule(
    "watchdog-support",
    "The watchdog needs PyTorch 2.1.0+ with torch_npu newer than 6.0.RC1 (MindSpore 2.4+)",
    "seed 恢复时间优化(PyTorch) 表1; RT05 Table 1",
)
def watchdog_support(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """torch_npu's watchdog thread exists only from PyTorch 2.1.0 with FrameworkPTAdapter newer than
    6.0.RC1 (MindSpore from 2.4); asking for it elsewhere silently leaves a fault waiting for the
    30-minute HCCL timeout."""
    if f.job.recovery.watchdog != "on" or f.watchdog_supported:
        return
    img = "%s.image" % f.path
    if f.is_pytorch:
        yield Finding(
            [
                "%s.recovery.watchdog" % f.path,
                img + ".torch",
                img + ".torch_npu",
                img + ".framework_pt_adapter",
            ],
            "watchdog is on but needs torch >= %s and torch_npu (FrameworkPTAdapter) newer than %s; "
            "the profile has torch %s, adapter %s"
            % (R.WATCHDOG_TORCH, R.WATCHDOG_ADAPTER_ABOVE, f.job.image.torch, f.adapter),
            "Upgrade the image (and declare image.torch and image.framework_pt_adapter), or set "
            "recovery.watchdog: auto.",
        )
    else:
        yield Finding(
            ["%s.recovery.watchdog" % f.path, img + ".mindspore"],
            "watchdog is on but MindSpore's HCCL watchdog needs MindSpore >= %s (profile: %s)"
            % (R.WATCHDOG_MINDSPORE, f.job.image.mindspore),
            "Upgrade MindSpore (and declare image.mindspore) or set recovery.watchdog: auto.",
        )


@job_rule(
    "watchdog-process-level",
    "The watchdog must be off with any process-level strategy or hot switching",
    "RT04 Table 3 (any strategy: HCCL_ASYNC_ERROR_HANDLING=0); RT01 strategy limits; RT05 Table 1",
)
def watchdog_process_level(profile: Profile, f: JobFacts) -> Iterable[Finding]:
    """Process-level rescheduling, in-place and online recovery, elastic training and hot switching
    all pause and repair the job themselves; a watchdog that kills the processes on the first
    communication error defeats them. The operator injects HCCL_ASYNC_ERROR_HANDLING=0 from 7.2."""
    if not (f.process_level or f.hot_switch):
        return
    why = "recover-strategy %s" % ",".join(f.strategies) if f.process_level else "subHealthyStrategy hotSwitch"
    if f.job.recovery.watchdog == "on":
        yield Finding(
            ["%s.recovery.watchdog" % f.path, "%s.recovery.strategies" % f.path],
            "watchdog is on together with %s" % why,
            "Set recovery.watchdog: auto (or off); the plan exports %s=0." % C.ENV_HCCL_ASYNC_ERROR_HANDLING,
        )
    value = f.job.env.get(C.ENV_HCCL_ASYNC_ERROR_HANDLING)
    if value is not None and value.strip() != "0":
        yield Finding(
            ["%s.env.%s" % (f.path, C.ENV_HCCL_ASYNC_ERROR_HANDLING)],
            "env sets %s=%s, which turns the watchdog on, together with %s"
            % (C.ENV_HCCL_ASYNC_ERROR_HANDLING, value, why),
            "Remove it from env; the plan sets it to 0.",
        )
