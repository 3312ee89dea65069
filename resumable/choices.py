"""Every closed set of values in the profile and the plan, defined once as a ``Literal`` alias.

The profile binder, ``resumable schema``, docs/profile.md and the type checker all read these
aliases; :func:`values` gives the tuple of allowed values at run time (``typing.Literal`` and
``typing.get_args`` exist from Python 3.8).
"""

from __future__ import annotations

import typing
from typing import Any, Literal, Tuple

Framework = Literal["pytorch", "mindspore"]
Launcher = Literal["torchrun", "torch_npu_run", "msrun"]
#: ring-controller.atlas values of the training chips (YAMLCFG)
Chip = Literal["ascend-910", "ascend-910b", "ascend-npu"]
Arch = Literal["aarch64", "x86_64"]
ContainerRuntime = Literal["containerd", "docker"]
JobKind = Literal["ascendjob", "vcjob"]
#: label tor-affinity: switch-affinity scheduling schema (INST05)
TorAffinity = Literal["normal-schema", "large-model-schema"]
FaultScheduling = Literal["grace", "force", "off"]
AutoOnOff = Literal["auto", "on", "off"]
SubHealth = Literal["ignore", "graceExit", "forceExit", "hotSwitch"]
RestartPolicy = Literal["Never", "OnFailure", "Always", "ExitCode"]
CompileMode = Literal["binaries", "cache", "default"]
TaskdManagerChoice = Literal["auto", "rank0", "scheduler", "off"]
#: where the TaskD Manager runs once the plan has decided
TaskdManagerWhere = Literal["rank0", "scheduler", "none"]
PullPolicy = Literal["Always", "IfNotPresent", "Never"]
#: The OS flavour of the images on Huawei's registry from MindCluster 26.1.0 (``v26.1.0-<os>``); Volcano's
#: are alpinelatest and openeuler24.03, so ubuntu22.04 means alpinelatest for them.
ImageOs = Literal["openeuler24.03", "ubuntu22.04"]
#: device plugin -hotReset: -1 off, 0 inference reset, 1 graceful fault tolerance, 2 offline reset
#: for process-level recovery (INST04 step 4 / Table 3)
HotReset = Literal[-1, 0, 1, 2]
#: recover-strategy values (PLR 准备任务YAML, the recover-strategy comment)
Strategy = Literal["retry", "recover", "recover-in-place", "elastic-training", "dump", "exit"]
#: vendor wheels the training image may install (always from files, never from an index by name)
WheelName = Literal["taskd", "mindio_ttp", "mindio_acp", "mindx_elastic"]
#: scheduling-stack components, as ``scheduler.resources`` and ``render --image`` key them
Component = Literal[
    "volcano-scheduler",
    "volcano-controllers",
    "ascend-operator",
    "clusterd",
    "device-plugin",
    "noded",
    "npu-exporter",
]
#: resources a ``scheduler.resources`` override may set (the builders read these two)
ResourceName = Literal["cpu", "memory"]
Severity = Literal["error", "warning"]


def values(alias: Any) -> Tuple[Any, ...]:
    """The allowed values of a ``Literal`` alias, in declaration order."""
    if typing.get_origin(alias) is not Literal:
        raise TypeError("%r is not a Literal alias" % (alias,))
    return tuple(typing.get_args(alias))


def is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is Literal


#: Pod tolerations (KUBE core/v1 Toleration).
TolerationOperator = Literal["Equal", "Exists"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
#: Container resources the profile may request beside the NPUs (the NPU resource is the plan's).
PodResourceName = Literal["cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi"]
SeccompType = Literal["RuntimeDefault", "Unconfined"]
