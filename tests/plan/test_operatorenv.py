"""The model of what the Ascend Operator injects for recovery (resumable.operatorenv), release by release.

The expected values are written from the operator's source, not read back from the model:
Ascend/mind-cluster component/ascend-operator/pkg/controllers/v1/env.go at v7.3.0 (identical at
v7.3.1, v7.3.2) and v26.0.0 (identical at v26.0.1, v26.1.0), job.go, and component/ascend-common/api/
consts.go. Where ../shared/upstream/src/mind-cluster holds those tags, the second half checks the
model's citations and constants against the files themselves.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from conftest import UPSTREAM

from resumable import operatorenv as O
from resumable.versions import Version

Q73 = "'{%s}'"  # MS_ENABLE_TFT up to 7.3.x: env.go:370 `'{` + ... + `}'`
Q26 = "{%s}"  # from 26.0.0: env.go:390 `{` + ... + `}`
PT = "pytorch"
MS = "mindspore"
#: PyTorch, any process strategy (env.go:362-365 at v7.3.0): the watchdog off
PT_OFF = {"HCCL_ASYNC_ERROR_HANDLING": "0"}
#: MindSpore, any process strategy (env.go:366-373 at v7.3.0)
MS_ON = {"MINDIO_FOR_MINDSPORE": "1", "MS_ENABLE_THM": "{HCCL_WATCHDOG:0}"}
#: addRecoverEnv / addRetryEnv / addDumpEnv (env.go:399-455): both switches
BOTH = {"PROCESS_RECOVER": "on", "ELASTIC_PROCESS_RECOVER_ENABLE": "1"}

#: (release, framework, recover-strategy, pod-rescheduling, subHealthyStrategy) -> the env the operator appends
Case = Tuple[str, str, Optional[str], Optional[str], Optional[str], Dict[str, str]]
CASES: List[Case] = [
    # before 7.2.RC1 the operator injects none of it (v6.0.0 env.go has no recovery env)
    ("6.0.0", PT, "recover,dump", "on", "hotSwitch", {}),
    ("6.0.0.SPC1", MS, "recover", "on", None, {}),
    ("7.1.RC1", PT, "recover-in-place", None, None, {}),
    # no annotation, no label: nothing (addProcessRecoverEnv returns on "", env.go:350-352)
    ("7.3.0", PT, None, None, None, {}),
    ("7.3.0", PT, "", None, None, {}),
    ("7.3.0", MS, None, None, "graceExit", {}),
    # PyTorch: HIGH_AVAILABILITY = the strategies' items sorted (sets.String.List), exit as recover
    ("7.3.0", PT, "recover", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "recover"}),
    ("7.3.0", PT, "exit", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "recover"}),
    ("7.3.0", PT, "retry", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "retry"}),
    ("7.3.0", PT, "dump", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "dump"}),
    (
        "7.3.0",
        PT,
        "recover-in-place",
        None,
        None,
        {**BOTH, **PT_OFF, "ENABLE_RESTART_FAULT_PROCESS": "on", "HIGH_AVAILABILITY": "recover"},
    ),
    # elastic-training: PROCESS_RECOVER only (addElasticTrainingEnv, env.go:457-468)
    (
        "7.3.0",
        PT,
        "elastic-training",
        None,
        None,
        {"PROCESS_RECOVER": "on", **PT_OFF, "HIGH_AVAILABILITY": "elastic-training"},
    ),
    (
        "7.3.0",
        PT,
        "recover,recover-in-place,dump,exit",
        None,
        None,
        {**BOTH, **PT_OFF, "ENABLE_RESTART_FAULT_PROCESS": "on", "HIGH_AVAILABILITY": "dump,recover"},
    ),
    (
        "7.3.0",
        PT,
        "retry,recover,dump,elastic-training",
        None,
        None,
        {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "dump,elastic-training,recover,retry"},
    ),
    # an unknown or spaced strategy adds nothing (strings.Split, no trim; default: return), yet the
    # annotation is there: the watchdog still goes off and HIGH_AVAILABILITY is empty
    ("7.3.0", PT, "recovr", None, None, {**PT_OFF, "HIGH_AVAILABILITY": ""}),
    ("7.3.0", PT, "recover, dump", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "recover"}),
    # pod-rescheduling changes nothing for PyTorch (addMSPodScheduleEnv is MindSpore's only)
    ("7.3.0", PT, None, "on", None, {}),
    ("7.3.0", PT, "retry", "on", None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "retry"}),
    # MindSpore: no HIGH_AVAILABILITY, no HCCL_ASYNC_ERROR_HANDLING
    ("7.3.0", MS, "recover", None, None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "ARF:1"}),
    ("7.3.0", MS, "retry", None, None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "HCCE:1,UCE:1"}),
    ("7.3.0", MS, "dump", None, None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "TTP:1"}),
    (
        "7.3.0",
        MS,
        "recover-in-place",
        None,
        None,
        {**BOTH, **MS_ON, "ENABLE_RESTART_FAULT_PROCESS": "on", "MS_ENABLE_TFT": Q73 % "ARF:1"},
    ),
    (
        "7.3.0",
        MS,
        "retry,recover,dump,exit",
        None,
        None,
        {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "ARF:1,HCCE:1,TTP:1,UCE:1"},
    ),
    # elastic-training is PyTorch's only: MindSpore gets the framework's three, with an empty map
    ("7.3.0", MS, "elastic-training", None, None, {**MS_ON, "MS_ENABLE_TFT": Q73 % ""}),
    # pod-rescheduling: RSC:1 in the map (env.go:367-369), or the map alone (addMSPodScheduleEnv)
    ("7.3.0", MS, "recover,dump", "on", None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "ARF:1,RSC:1,TTP:1"}),
    ("7.3.0", MS, None, "on", None, {"MS_ENABLE_TFT": Q73 % "RSC:1"}),
    ("7.3.0", MS, None, "true", None, {}),  # isPodScheduleStrategy: the value must be "on"
    # hotSwitch (addSubHealthyEnv, env.go:330-346): alone, and merged into the strategies' entries
    ("7.3.0", PT, None, None, "hotSwitch", {"HIGH_AVAILABILITY": "recover", **BOTH}),
    ("7.3.0", MS, None, None, "hotSwitch", {"MS_ENABLE_TFT": Q73 % "ARF:1", "MINDIO_FOR_MINDSPORE": "1", **BOTH}),
    ("7.3.0", PT, "retry,dump", None, "hotSwitch", {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "dump,recover,retry"}),
    ("7.3.0", MS, "dump", None, "hotSwitch", {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "ARF:1,TTP:1"}),
    ("7.3.0", MS, None, "on", "hotSwitch", {"MS_ENABLE_TFT": Q73 % "ARF:1,RSC:1", "MINDIO_FOR_MINDSPORE": "1", **BOTH}),
    # 7.2.RC1 and the 7.3 patch releases as 7.3.0
    ("7.2.RC1", MS, "dump", None, None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "TTP:1"}),
    ("7.3.1", MS, "retry", None, None, {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q73 % "HCCE:1,UCE:1"}),
    ("7.3.2", PT, "recover", None, None, {**BOTH, **PT_OFF, "HIGH_AVAILABILITY": "recover"}),
    # from 26.0.0: MS_ENABLE_TFT without the quotes, the rest unchanged
    (
        "26.0.0",
        MS,
        "retry,recover,dump,exit",
        None,
        None,
        {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q26 % "ARF:1,HCCE:1,TTP:1,UCE:1"},
    ),
    ("26.0.1", MS, None, "on", None, {"MS_ENABLE_TFT": Q26 % "RSC:1"}),
    ("26.1.0", MS, "recover", "on", "hotSwitch", {**BOTH, **MS_ON, "MS_ENABLE_TFT": Q26 % "ARF:1,RSC:1"}),
    (
        "26.1.0",
        PT,
        "recover,recover-in-place,dump,exit",
        None,
        None,
        {**BOTH, **PT_OFF, "ENABLE_RESTART_FAULT_PROCESS": "on", "HIGH_AVAILABILITY": "dump,recover"},
    ),
    ("26.1.0", PT, None, None, "hotSwitch", {"HIGH_AVAILABILITY": "recover", **BOTH}),
    # a framework the operator has no recovery env for (tensorflow)
    ("26.1.0", "tensorflow", "recover", "on", "hotSwitch", {}),
]


@pytest.mark.parametrize(
    "release,framework,strategy,rescheduling,sub_health,expected",
    CASES,
    ids=["%s-%s-%s-%s-%s" % c[:5] for c in CASES],
)
def test_what_the_operator_injects(
    release: str,
    framework: str,
    strategy: Optional[str],
    rescheduling: Optional[str],
    sub_health: Optional[str],
    expected: Dict[str, str],
) -> None:
    got = O.injected_env(Version(release), framework, strategy, rescheduling, sub_health)
    assert {i.name: i.value for i in got} == expected
    assert len({i.name for i in got}) == len(got), "one entry per variable"
    tag = "v26.0.0" if Version(release) >= Version("26.0.0") else "v7.3.0"
    for i in got:
        assert i.source.startswith("MC:@%s component/ascend-operator/pkg/controllers/v1/env.go:" % tag), i.source


def test_how_each_entry_gets_into_the_container() -> None:
    """addEnvValue for the strategies' entries, addMSPodScheduleEnv only where no MS_ENABLE_TFT is,
    addEnvValueWithDedup for a hot switch; what triggers each (the profile field named in findings)."""
    release = Version("7.3.0")
    got = {i.name: i for i in O.injected_env(release, MS, "dump", "on", "hotSwitch")}
    assert got["MS_ENABLE_TFT"].how == O.APPEND
    assert set(got["MS_ENABLE_TFT"].triggers) == {"recover-strategy", "pod-rescheduling", "subHealthyStrategy"}
    assert got["MS_ENABLE_THM"].triggers == ("recover-strategy",)
    alone = {i.name: i for i in O.injected_env(release, MS, None, "on", None)}
    assert alone["MS_ENABLE_TFT"].how == O.IF_ABSENT and O.fields_of(alone["MS_ENABLE_TFT"]) == (
        "recovery.pod_rescheduling",
    )
    hot = {i.name: i for i in O.injected_env(release, PT, None, None, "hotSwitch")}
    assert {i.how for i in hot.values()} == {O.DEDUP}
    assert O.fields_of(hot["PROCESS_RECOVER"]) == ("recovery.sub_health",)


def test_an_env_value_says_the_same_when_the_operator_would_read_it_so() -> None:
    release = Version("7.3.0")
    (ha,) = [i for i in O.injected_env(release, PT, "dump,recover", None, None) if i.name == "HIGH_AVAILABILITY"]
    assert O.same_value(ha, "recover,dump", release) and O.same_value(ha, " dump, recover ", release)
    assert not O.same_value(ha, "recover", release)
    (tft,) = [i for i in O.injected_env(release, MS, "dump,recover", None, None) if i.name == "MS_ENABLE_TFT"]
    assert O.same_value(tft, "'{TTP:1,ARF:1}'", release)
    assert not O.same_value(tft, "{ARF:1,TTP:1}", release), "the quotes are part of the value at 7.3"
    (thm,) = [i for i in O.injected_env(release, MS, "dump", None, None) if i.name == "MS_ENABLE_THM"]
    assert not O.same_value(thm, "{HCCL_WATCHDOG:0,OTHER:1}", release), "OTHER:1 would be lost"


# --- the citations and constants against the operator's source ------------------------------------------

SOURCE_TAGS = {
    "v7.3.0": "v7.3.0",
    "v7.3.1": "v7.3.0",
    "v7.3.2": "v7.3.0",
    "v26.0.0": "v26.0.0",
    "v26.0.1": "v26.0.0",
    "v26.1.0": "v26.0.0",
}


def mind_cluster(tag: str) -> Path:
    root = Path(os.environ.get("ASCEND_RESUMABLE_UPSTREAM", str(UPSTREAM))) / "src" / "mind-cluster" / tag
    assert root.is_dir(), "the Ascend/mind-cluster sources at %s are missing: %s (../shared/upstream/src)" % (tag, root)
    return root


@pytest.mark.parametrize("tag", sorted(SOURCE_TAGS))
def test_every_cited_line_range_is_the_function_it_names(tag: str) -> None:
    """Each (file, lines, what) of operatorenv.TAGS: the first line declares the first function
    named, the last line closes it (a function's closing brace), at every tag the row stands for."""
    (cited,) = [t for t in O.TAGS if t.tag == SOURCE_TAGS[tag]]
    base = mind_cluster(tag) / "component/ascend-operator/pkg/controllers/v1"
    for key, (file, lines, what) in cited.lines.items():
        text = (base / file).read_text(encoding="utf-8").splitlines()
        start, end = (int(n) for n in lines.split("-"))
        first = what.split(",")[0].strip()
        assert re.match(r"func (\([^)]*\) )?%s\(" % re.escape(first), text[start - 1]), (tag, key, text[start - 1])
        assert text[end - 1] == "}", (tag, key, end, text[end - 1])


@pytest.mark.parametrize("tag", sorted(SOURCE_TAGS))
def test_the_names_and_values_are_the_operators(tag: str) -> None:
    """ascend-common api/consts.go: every name and value the model uses; env.go: the MS_ENABLE_TFT
    braces of the tag (with the single quotes up to 7.3.x)."""
    consts = (mind_cluster(tag) / "component/ascend-common/api/consts.go").read_text(encoding="utf-8")
    values = dict(re.findall(r"^\s*(\w+)\s*=\s*[`\"]([^`\"]*)[`\"]", consts, re.M))
    expected = {
        "PodScheduleLabel": "pod-rescheduling",
        "RecoverStrategyKey": "recover-strategy",
        "SubHealthyStrategy": "subHealthyStrategy",
        "SubHealthyHotSwitch": O.HOT_SWITCH,
        "RecoverStrategy": "recover",
        "RetryStrategy": "retry",
        "InPlaceStrategy": "recover-in-place",
        "DumpStrategy": "dump",
        "ExitStrategy": "exit",
        "ElasticTraining": "elastic-training",
        "ProcessRecoverEnv": "PROCESS_RECOVER",
        "ElasticRecoverEnv": "ELASTIC_PROCESS_RECOVER_ENABLE",
        "EnableRestartEnv": "ENABLE_RESTART_FAULT_PROCESS",
        "HighAvailableEnv": "HIGH_AVAILABILITY",
        "PtCloseWatchDogKey": "HCCL_ASYNC_ERROR_HANDLING",
        "PtCloseWatchDogValue": O.PT_WATCHDOG_OFF,
        "MsRecoverEnv": "MS_ENABLE_TFT",
        "EnableMS": "MINDIO_FOR_MINDSPORE",
        "MsDumpStrategy": O.TTP,
        "MsUceStrategy": O.UCE,
        "MsArfStrategy": O.ARF,
        "MsHcceStrategy": O.HCCE,
        "MsRscStrategy": O.RSC,
        "MsCloseWatchDogKey": "MS_ENABLE_THM",
        "MsCloseWatchDogValue": O.MS_WATCHDOG_OFF,
        "EnableFunc": O.ON,
        "EnableFlag": O.FLAG,
        "PytorchFramework": O.PYTORCH,
        "MindSporeFramework": O.MINDSPORE,
    }
    assert {k: values.get(k) for k in expected} == expected
    env_go = (mind_cluster(tag) / "component/ascend-operator/pkg/controllers/v1/env.go").read_text(encoding="utf-8")
    quoted = "env[api.MsRecoverEnv] = `'{` + strings.Join(trainEnv.List(), \",\") + `}'`"
    plain = 'env[api.MsRecoverEnv] = `{` + strings.Join(trainEnv.List(), ",") + `}`'
    assert (quoted in env_go, plain in env_go) == ((True, False) if tag.startswith("v7") else (False, True))
    got = O.injected_env(Version(tag[1:]), MS, "dump", None, None)
    assert {i.name: i.value for i in got}["MS_ENABLE_TFT"] == ("'{TTP:1}'" if tag.startswith("v7") else "{TTP:1}")


def test_releases_before_7_3_read_no_recovery_env() -> None:
    """v6.0.0 and v6.0.0.SPC1: env.go has none of the recovery names (the model gives nothing there)."""
    for tag in ("v6.0.0", "v6.0.0.SPC1"):
        env_go = (mind_cluster(tag) / "component/ascend-operator/pkg/controllers/v1/env.go").read_text(encoding="utf-8")
        assert not re.search(r"Recover|HighAvail|MsRecoverEnv|SubHealthy", env_go), tag
        assert O.injected_env(Version(tag[1:]), PT, "recover", "on", "hotSwitch") == []
