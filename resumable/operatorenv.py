"""What the Ascend Operator injects for recovery into the ``ascend`` container of an AscendJob's pods,
per release, framework, ``recover-strategy`` annotation, ``pod-rescheduling`` label and
``subHealthyStrategy`` label (:func:`injected_env`, one pure function), and what that means for a job
of the profile (:func:`operator_env`, :func:`env_entries`).

Read in Ascend/mind-cluster ``component/ascend-operator/pkg/controllers/v1/`` (``env.go``, ``job.go``,
``pod.go``) and ``component/ascend-common/api/consts.go`` (names and values: consts.go:117-191 and
214-216 at v7.3.0, :118-192 and 215-217 at v26.0.0, :120-194 and 217-219 at v26.1.0). env.go and
job.go are byte-identical at v7.3.0, v7.3.1 and v7.3.2, and at v26.0.0, v26.0.1 and v26.1.0, so the
citations name v7.3.0 and v26.0.0 (:data:`TAGS`); v6.0.0 and v6.0.0.SPC1 inject none of it (their
env.go has no recovery env at all), and 7.2.RC1 up to 7.3.0 is taken to be 7.3.0's (the gate
:data:`resumable.releases.OPERATOR_INJECTS_RECOVERY_ENV`; no 7.2 source was read).

On every pod of an AscendJob whose ascend container requests NPUs (pod.go setEnv, :653-680 at v7.3.0,
:676 at v26.0.0: nothing when ``ctReq == 0``, nothing on the Worker of a Scheduler-less MindSpore job;
the plan always gives every replica NPUs and a MindSpore job a Scheduler), setPytorchEnv /
setMindSporeEnv end with, in this order:

1. ``addProcessRecoverEnv`` when the ``recover-strategy`` annotation is not empty: each strategy of
   it (split on ``,``, not trimmed; an unknown one is skipped) adds switches and an item
   (``addEnvByStrategy``), then PyTorch gets ``HCCL_ASYNC_ERROR_HANDLING=0`` and
   ``HIGH_AVAILABILITY=<items, sorted>``, MindSpore ``MS_ENABLE_TFT={<items, sorted>}`` (``RSC:1``
   added with ``pod-rescheduling: on``), ``MINDIO_FOR_MINDSPORE=1`` and
   ``MS_ENABLE_THM={HCCL_WATCHDOG:0}``. Each is appended with ``addEnvValue``, which never looks
   for an entry of the same name (a Go map: the order among them is random).
2. MindSpore only, ``addMSPodScheduleEnv``: with ``pod-rescheduling: on`` and no MS_ENABLE_TFT in
   the container yet, ``MS_ENABLE_TFT={RSC:1}``.
3. ``addSubHealthyEnv`` with ``subHealthyStrategy: hotSwitch``: ``HIGH_AVAILABILITY`` gets
   ``recover`` (PyTorch), ``MS_ENABLE_TFT`` gets ``ARF:1`` and ``MINDIO_FOR_MINDSPORE=1``
   (MindSpore), then ``PROCESS_RECOVER=on`` and ``ELASTIC_PROCESS_RECOVER_ENABLE=1``, each with
   ``addEnvValueWithDedup``: the first entry of that name is rewritten (the two list variables
   merged as sets, sorted), else one is appended.

Up to 7.3.x MS_ENABLE_TFT's value carries single quotes, ``'{ARF:1,TTP:1}'``; from 26.0.0 it is
``{ARF:1,TTP:1}`` (:data:`resumable.releases.MS_ENABLE_TFT_UNQUOTED`).

A variable the operator appends is defined twice when the pod template has it too: Kubernetes keeps
the later definition (the operator's) and the API server warns (``hides previous definition``). So
the plan leaves every injected variable out of an AscendJob's pod template (:mod:`resumable.plan.env`)
and an env entry that says something else is an error (rule ``env-operator-injects``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple

from . import constants as C
from . import releases as R
from .envowners import Conflict, watchdog_from_hccl, watchdog_from_thm
from .facts import JobFacts
from .versions import Version

# --- the operator's names and values (ascend-common api/consts.go) ----------------------------------------
PYTORCH = "pytorch"  # api.PytorchFramework
MINDSPORE = "mindspore"  # api.MindSporeFramework
FRAMEWORKS = (PYTORCH, MINDSPORE)
ON = "on"  # api.EnableFunc
FLAG = "1"  # api.EnableFlag
HOT_SWITCH = "hotSwitch"  # api.SubHealthyHotSwitch
#: MindSpore's MS_ENABLE_TFT items (api.MsArfStrategy, MsUceStrategy, MsHcceStrategy, MsDumpStrategy, MsRscStrategy)
ARF, UCE, HCCE, TTP, RSC = "ARF:1", "UCE:1", "HCCE:1", "TTP:1", "RSC:1"
#: api.PtCloseWatchDogValue, api.MsCloseWatchDogValue
PT_WATCHDOG_OFF = "0"
MS_WATCHDOG_OFF = "{HCCL_WATCHDOG:0}"

#: The job metadata the operator reads (job.go getJobRecoverStrategy, isPodScheduleStrategy,
#: getSubHealthyStrategy), and the profile field the plan writes each from.
TRIGGER_FIELDS: Dict[str, str] = {
    C.ANNOTATION_RECOVER_STRATEGY: "recovery.strategies",
    C.LABEL_POD_RESCHEDULING: "recovery.pod_rescheduling",
    C.LABEL_SUB_HEALTHY_STRATEGY: "recovery.sub_health",
}

# --- how an entry gets into the container ------------------------------------------------------------------
#: addEnvValue: appended after whatever the container has, also after an entry of the same name
APPEND = "append"
#: addEnvValueWithDedup: the first entry of the name is rewritten (list variables merged), else appended
DEDUP = "dedup"
#: addMSPodScheduleEnv: only when the container has no entry of the name
IF_ABSENT = "if-absent"


class Tag(NamedTuple):
    """The source tag read for a range of releases, and where each behaviour is there: (file, lines, what)."""

    tag: str
    lines: Dict[str, Tuple[str, str, str]]


#: env.go / job.go line ranges at the two tags whose files differ (see the module docstring)
TAGS: Tuple[Tag, ...] = (
    Tag(
        "v7.3.0",
        {
            "append": ("env.go", "33-38", "addEnvValue"),
            "dedup": ("env.go", "42-123", "addEnvValueWithDedup, mergeEnvValue, extractMsRecoverContent"),
            "pytorch": ("env.go", "240-260", "setPytorchEnv"),
            "mindspore": ("env.go", "200-238", "setMindSporeEnv"),
            "pod_schedule": ("env.go", "318-328", "addMSPodScheduleEnv"),
            "sub_healthy": ("env.go", "330-346", "addSubHealthyEnv"),
            "process": ("env.go", "348-378", "addProcessRecoverEnv, doAddProcessRecoverEnv"),
            "strategies": ("env.go", "380-468", "addEnvByStrategy, add*Env"),
            "job": ("job.go", "475-503", "getJobRecoverStrategy, getSubHealthyStrategy, isPodScheduleStrategy"),
            "podgroup": ("job.go", "461-473", "addPgProcessRecoverLabel"),
        },
    ),
    Tag(
        "v26.0.0",
        {
            "append": ("env.go", "33-38", "addEnvValue"),
            "dedup": ("env.go", "42-123", "addEnvValueWithDedup, mergeEnvValue, extractMsRecoverContent"),
            "pytorch": ("env.go", "248-272", "setPytorchEnv"),
            "mindspore": ("env.go", "204-246", "setMindSporeEnv"),
            "pod_schedule": ("env.go", "337-347", "addMSPodScheduleEnv"),
            "sub_healthy": ("env.go", "349-365", "addSubHealthyEnv"),
            "process": ("env.go", "367-398", "addProcessRecoverEnv, doAddProcessRecoverEnv"),
            "strategies": ("env.go", "400-488", "addEnvByStrategy, add*Env"),
            "job": ("job.go", "493-521", "getJobRecoverStrategy, getSubHealthyStrategy, isPodScheduleStrategy"),
            "podgroup": ("job.go", "479-491", "addPgProcessRecoverLabel"),
        },
    ),
)
OPERATOR_DIR = "component/ascend-operator/pkg/controllers/v1/"


def source_tag(release: Version) -> Tag:
    """The tag whose source describes ``release``: 7.3.0 up to 26.0, 26.0.0 from there."""
    return TAGS[1] if R.at_least(release, R.MS_ENABLE_TFT_UNQUOTED) else TAGS[0]


def cite(release: Version, *keys: str) -> str:
    """One reference per file: ``MC:@<tag> component/ascend-operator/pkg/controllers/v1/env.go:a-b
    (what), :c-d (what)``, in the order of ``keys``."""
    tag = source_tag(release)
    by_file: Dict[str, List[str]] = {}
    for key in keys:
        file, lines, what = tag.lines[key]
        by_file.setdefault(file, []).append("%s (%s)" % (lines, what))
    return "; ".join("MC:@%s %s%s:%s" % (tag.tag, OPERATOR_DIR, f, ", :".join(parts)) for f, parts in by_file.items())


class StrategyEnv(NamedTuple):
    """What one strategy of ``recover-strategy`` adds (addEnvByStrategy and its add*Env)."""

    #: the switches, the same for both frameworks
    switches: Tuple[Tuple[str, str], ...]
    #: its HIGH_AVAILABILITY item (PyTorch)
    pytorch: Tuple[str, ...]
    #: its MS_ENABLE_TFT items (MindSpore)
    mindspore: Tuple[str, ...]
    #: the frameworks it applies to (addElasticTrainingEnv returns at once on another)
    frameworks: Tuple[str, ...] = FRAMEWORKS


_RECOVER = ((C.ENV_PROCESS_RECOVER, ON), (C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, FLAG))
#: addEnvByStrategy: exit is handled as recover (addRecoverEnv); an unknown strategy adds nothing
STRATEGY_ENV: Dict[str, StrategyEnv] = {
    "recover": StrategyEnv(_RECOVER, ("recover",), (ARF,)),
    "exit": StrategyEnv(_RECOVER, ("recover",), (ARF,)),
    "retry": StrategyEnv(_RECOVER, ("retry",), (UCE, HCCE)),
    "dump": StrategyEnv(_RECOVER, ("dump",), (TTP,)),
    "recover-in-place": StrategyEnv((*_RECOVER, (C.ENV_ENABLE_RESTART_FAULT_PROCESS, ON)), ("recover",), (ARF,)),
    "elastic-training": StrategyEnv(((C.ENV_PROCESS_RECOVER, ON),), ("elastic-training",), (), (PYTORCH,)),
}


class Injected(NamedTuple):
    """One variable the operator puts into the ascend container."""

    name: str
    value: str
    #: how its entry gets there: :data:`APPEND`, :data:`DEDUP` or :data:`IF_ABSENT` (the first writer's)
    how: str
    #: the job metadata that makes the operator write it (keys of :data:`TRIGGER_FIELDS`)
    triggers: Tuple[str, ...]
    source: str


def _items(value: str) -> Set[str]:
    """parseCommaSeparatedValues: trimmed, non-empty items."""
    return {v.strip() for v in value.split(",") if v.strip()}


def _braces(quoted: bool) -> Tuple[str, str]:
    return ("'{", "}'") if quoted else ("{", "}")


def tft_value(items: Iterable[str], quoted: bool) -> str:
    """MS_ENABLE_TFT as the operator writes it: the items sorted (sets.String.List) in braces."""
    opening, closing = _braces(quoted)
    return opening + ",".join(sorted(items)) + closing


def tft_items(value: str, quoted: bool) -> Set[str]:
    """extractMsRecoverContent then parseCommaSeparatedValues: the items of an MS_ENABLE_TFT value."""
    opening, closing = _braces(quoted)
    value = value.strip()
    if value.startswith(opening):
        value = value[len(opening) :]
    if value.endswith(closing):
        value = value[: len(value) - len(closing)]
    return _items(value)


def injected_env(
    release: Version,
    framework: str,
    recover_strategy: Optional[str],
    pod_rescheduling: Optional[str],
    sub_healthy_strategy: Optional[str],
) -> List[Injected]:
    """Every variable the Ascend Operator of ``release`` injects for recovery into the ascend
    container of an AscendJob with the ``framework`` label, the ``recover-strategy`` annotation and
    the ``pod-rescheduling`` and ``subHealthyStrategy`` labels given (None: absent), on a pod whose
    container has none of them yet. Values are exactly the operator's strings."""
    if not R.at_least(release, R.OPERATOR_INJECTS_RECOVERY_ENV) or framework not in FRAMEWORKS:
        return []
    quoted = not R.at_least(release, R.MS_ENABLE_TFT_UNQUOTED)
    where = "pytorch" if framework == PYTORCH else "mindspore"
    rescheduling = pod_rescheduling == ON  # isPodScheduleStrategy
    out: Dict[str, Injected] = {}

    def put(name: str, value: str, how: str, triggers: Tuple[str, ...], source: str) -> None:
        out[name] = Injected(name, value, how, triggers, source)

    if recover_strategy:  # addProcessRecoverEnv: an absent and an empty annotation alike do nothing
        switches: Dict[str, str] = {}
        items: Set[str] = set()
        for strategy in recover_strategy.split(","):
            known = STRATEGY_ENV.get(strategy)
            if known is None or framework not in known.frameworks:
                continue
            switches.update(known.switches)
            items.update(known.pytorch if framework == PYTORCH else known.mindspore)
        trigger: Tuple[str, ...] = (C.ANNOTATION_RECOVER_STRATEGY,)
        values = dict(switches)
        if framework == PYTORCH:
            values[C.ENV_HCCL_ASYNC_ERROR_HANDLING] = PT_WATCHDOG_OFF
            values[C.ENV_HIGH_AVAILABILITY] = ",".join(sorted(items))
        else:
            if rescheduling:
                items.add(RSC)
            values[C.ENV_MS_ENABLE_TFT] = tft_value(items, quoted)
            values[C.ENV_MINDIO_FOR_MINDSPORE] = FLAG
            values[C.ENV_MS_ENABLE_THM] = MS_WATCHDOG_OFF
        source = cite(release, where, "process", "strategies", "append", "job")
        for name in sorted(values):  # a Go map: the operator's order is random
            both = name == C.ENV_MS_ENABLE_TFT and rescheduling
            put(name, values[name], APPEND, trigger + ((C.LABEL_POD_RESCHEDULING,) if both else ()), source)
    if framework == MINDSPORE and rescheduling and C.ENV_MS_ENABLE_TFT not in out:
        put(
            C.ENV_MS_ENABLE_TFT,
            tft_value([RSC], quoted),
            IF_ABSENT,
            (C.LABEL_POD_RESCHEDULING,),
            cite(release, "mindspore", "pod_schedule", "append", "job"),
        )
    if sub_healthy_strategy == HOT_SWITCH:
        source = cite(release, where, "sub_healthy", "dedup", "job")
        trigger = (C.LABEL_SUB_HEALTHY_STRATEGY,)

        def dedup(name: str, value: str) -> None:
            old = out.get(name)
            if old is None:
                put(name, value, DEDUP, trigger, source)
                return
            if name == C.ENV_HIGH_AVAILABILITY:
                value = ",".join(sorted(_items(old.value) | _items(value)))
            elif name == C.ENV_MS_ENABLE_TFT:
                value = tft_value(tft_items(old.value, quoted) | tft_items(value, quoted), quoted)
            put(name, value, old.how, old.triggers + trigger, old.source + "; " + source)

        if framework == PYTORCH:
            dedup(C.ENV_HIGH_AVAILABILITY, "recover")
        else:
            dedup(C.ENV_MS_ENABLE_TFT, tft_value([ARF], quoted))
            dedup(C.ENV_MINDIO_FOR_MINDSPORE, FLAG)
        dedup(C.ENV_PROCESS_RECOVER, ON)
        dedup(C.ENV_ELASTIC_PROCESS_RECOVER_ENABLE, FLAG)
    return list(out.values())


def injected_into(job: Mapping[str, Any], release: Version) -> List[Injected]:
    """:func:`injected_env` for an AscendJob object as the operator reads it: the ``framework`` label
    (its env switch, pod.go setEnv), the ``recover-strategy`` annotation and the two labels. Nothing
    for another kind."""
    if job.get("kind") != C.ASCENDJOB_KIND:
        return []
    meta = job.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return injected_env(
        release,
        str(labels.get(C.LABEL_FRAMEWORK, "")),
        annotations.get(C.ANNOTATION_RECOVER_STRATEGY),
        labels.get(C.LABEL_POD_RESCHEDULING),
        labels.get(C.LABEL_SUB_HEALTHY_STRATEGY),
    )


# --- a job of the profile ------------------------------------------------------------------------------------


def recover_strategy_annotation(f: JobFacts) -> Optional[str]:
    """The job's ``recover-strategy`` annotation: its strategies in profile order (None: no strategy)."""
    return ",".join(f.strategies) or None


def pod_rescheduling_label(f: JobFacts) -> Optional[str]:
    """The job's ``pod-rescheduling`` label: ``on`` with recovery.pod_rescheduling."""
    return ON if f.job.recovery.pod_rescheduling else None


def sub_healthy_label(f: JobFacts) -> Optional[str]:
    """The job's ``subHealthyStrategy`` label: recovery.sub_health unless ``ignore``."""
    return f.job.recovery.sub_health if f.job.recovery.sub_health != "ignore" else None


def operator_env(f: JobFacts) -> List[Injected]:
    """What the Ascend Operator injects into every pod of job ``f`` (nothing into a Volcano Job)."""
    if f.job.kind != "ascendjob":
        return []
    return injected_env(
        f.release, f.framework, recover_strategy_annotation(f), pod_rescheduling_label(f), sub_healthy_label(f)
    )


def same_value(injected: Injected, value: str, release: Version) -> bool:
    """Whether ``value`` (an env entry's) says what the operator injects: the same string, or for
    the two variables the operator itself reads as sets (mergeEnvValue), the same items."""
    value = value.strip()
    if injected.name == C.ENV_HIGH_AVAILABILITY:
        return _items(value) == _items(injected.value)
    if injected.name == C.ENV_MS_ENABLE_TFT:
        quoted = not R.at_least(release, R.MS_ENABLE_TFT_UNQUOTED)
        opening, closing = _braces(quoted)
        framed = value.startswith(opening) and value.endswith(closing)
        return framed and tft_items(value, quoted) == tft_items(injected.value, quoted)
    return value == injected.value


def watchdog_on_in_env(name: str, value: str) -> bool:
    """An env entry that switches the watchdog on (or is no watchdog value at all) where the operator
    injects it off. The operator does that only for a job with a process-level strategy, so the
    watchdog rules report the entry already (watchdog-process-level, env-contradicts-profile: a
    watchdog switched on through env is the same error as recovery.watchdog: on)."""
    if name == C.ENV_HCCL_ASYNC_ERROR_HANDLING:
        return watchdog_from_hccl(value) != "off"
    if name == C.ENV_MS_ENABLE_THM:
        return watchdog_from_thm(value) == "on"
    return False


def fields_of(injected: Injected) -> Tuple[str, ...]:
    """The profile fields that make the operator inject ``injected``."""
    return tuple(TRIGGER_FIELDS[t] for t in injected.triggers)


#: what the operator does to an env entry of the pod template with the same name
FATE = {
    APPEND: "appends its own definition after yours (addEnvValue), and Kubernetes keeps the later one: your "
    "value would be silently overridden (and the API server warns of the duplicate)",
    DEDUP: "rewrites your entry (addEnvValueWithDedup): your value would be silently replaced",
    IF_ABSENT: "then leaves yours in place and skips its own (addMSPodScheduleEnv): your value would replace "
    "what the plan's pod-level rescheduling asks MindSpore for",
}


class EnvEntries(NamedTuple):
    """The profile's env entries for variables the operator injects into job ``f``."""

    #: (entry's value, what the operator injects) where the two agree: left out of the pod template
    agreeing: List[Tuple[str, Injected]]
    #: where they do not: rule env-operator-injects
    conflicts: List[Conflict]


def env_entries(f: JobFacts) -> EnvEntries:
    """Sort the profile's ``env`` entries for injected variables into agreeing ones and conflicts."""
    agreeing: List[Tuple[str, Injected]] = []
    conflicts: List[Conflict] = []
    env = f.declared.env
    for injected in operator_env(f):
        value = env.get(injected.name)
        if value is None or watchdog_on_in_env(injected.name, value):
            continue
        if same_value(injected, value, f.release):
            agreeing.append((value, injected))
            continue
        fields = fields_of(injected)
        conflicts.append(
            Conflict(
                injected.name,
                fields,
                "env %s=%s: the Ascend Operator of MindCluster %s injects %s=%s into the ascend container of every "
                "pod of this AscendJob (from %s; %s), and %s"
                % (
                    injected.name,
                    value,
                    f.release.text,
                    injected.name,
                    injected.value,
                    ", ".join(fields),
                    injected.source,
                    FATE[injected.how],
                ),
                "Remove %s from env: the operator sets it from %s; for another value change %s."
                % (injected.name, ", ".join(fields), " or ".join(fields)),
            )
        )
    return EnvEntries(agreeing, conflicts)
