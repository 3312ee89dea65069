"""What the Ascend Operator injects into an AscendJob's pods (resumable.operatorenv) and the job the
plan renders: the pod template defines no variable the operator appends (addEnvValue never looks for
an existing entry, so a second definition would be hidden by the operator's and the API server warns:
MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/env.go:33-38), the plan's notes name what it
injects, an env entry that says something else is refused, and the launcher in such a pod reads the
operator's values without a warning (that last on the pods the real operator makes:
tests/cluster/test_operator_admission.py and tests/cluster/jobpods.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES, example_doc, example_profile, plan_of_doc

from resumable import constants as C
from resumable.api import job_plan, load_plan_text
from resumable.cli import main
from resumable.manifests import build_deployment
from resumable.operatorenv import injected_into
from resumable.plan.model import Plan
from resumable.plan.text import render_text
from resumable.versions import Version

EXAMPLE_NAMES = [p.stem for p in EXAMPLE_FILES]


def variants() -> List[Tuple[str, Dict[str, Any]]]:
    """Every example, and the recovery settings that make the operator inject something else:
    MindSpore with Pod-level rescheduling, hot switching on either framework, each at 26.1.0."""
    out = [(name, example_doc(name + ".yaml")) for name in EXAMPLE_NAMES]
    ms = example_doc("mindspore-process-recovery.yaml")
    ms["jobs"][0]["recovery"]["pod_rescheduling"] = True
    out.append(("mindspore-pod-rescheduling", ms))
    ms_pod = example_doc("mindspore-process-recovery.yaml")
    ms_pod["jobs"][0]["recovery"].update(strategies=[], pod_rescheduling=True)
    out.append(("mindspore-pod-rescheduling-only", ms_pod))
    hot = example_doc("pytorch-pod-rescheduling.yaml")
    hot["jobs"][0]["recovery"].update(sub_health="hotSwitch", watchdog="auto")
    out.append(("pytorch-hot-switch-only", hot))
    for name in ("pytorch-process-recovery", "mindspore-process-recovery"):
        doc = example_doc(name + ".yaml")
        doc["jobs"][0]["recovery"]["sub_health"] = "hotSwitch"
        out.append((name + "-hot-switch", doc))
        newer = example_doc(name + ".yaml")
        newer["cluster"]["mindcluster"] = "26.1.0"
        out.append((name + "-26.1.0", newer))
    return out


VARIANTS = variants()


def ascend_jobs(plan: Plan, doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The AscendJobs the render and the Pulumi program write (the same builder: test_render_equals_pulumi)."""
    objs = build_deployment(plan, profile_text=yaml.safe_dump(doc, sort_keys=False)).stage("jobs").objects
    return [o for o in objs if o["kind"] == C.ASCENDJOB_KIND]


def template_env(job: Dict[str, Any]) -> Dict[str, List[str]]:
    """Replica type -> the env names of its ascend container, in order."""
    out: Dict[str, List[str]] = {}
    for rtype, spec in job["spec"]["replicaSpecs"].items():
        (container,) = [c for c in spec["template"]["spec"]["containers"] if c["name"] == "ascend"]
        out[rtype] = [e["name"] for e in container.get("env", [])]
    return out


@pytest.mark.parametrize("name,doc", VARIANTS, ids=[n for n, _ in VARIANTS])
def test_no_pod_template_defines_what_the_operator_injects(name: str, doc: Dict[str, Any]) -> None:
    """Applied to the rendered job as the operator reads it (framework label, recover-strategy,
    pod-rescheduling, subHealthyStrategy), the model's variables are in no replica's template,
    and each pod ends up with one definition of every variable."""
    plan = plan_of_doc(doc, name)
    assert not [v for v in plan.violations if v.severity == "error"], plan.violations
    release = Version(doc["cluster"]["mindcluster"])
    for job in ascend_jobs(plan, doc):
        injected = {i.name for i in injected_into(job, release)}
        for rtype, names in template_env(job).items():
            assert not injected & set(names), (rtype, sorted(injected & set(names)))
            assert len(names) == len(set(names)), names
        assert {e.name for e in job_plan(plan, job["metadata"]["name"]).operator_env} == injected


def test_the_process_recovery_examples_leave_the_watchdog_to_the_operator() -> None:
    """The two variables issue 30 found twice in every pod: HCCL_ASYNC_ERROR_HANDLING (PyTorch) and
    MS_ENABLE_THM (MindSpore) come from the operator, with the value the plan needs."""
    for name, variable, value in (
        ("pytorch-process-recovery", "HCCL_ASYNC_ERROR_HANDLING", "0"),
        ("mindspore-process-recovery", "MS_ENABLE_THM", "{HCCL_WATCHDOG:0}"),
    ):
        doc = example_doc(name + ".yaml")
        plan = plan_of_doc(doc, name)
        (job,) = ascend_jobs(plan, doc)
        assert all(variable not in names for names in template_env(job).values()), name
        injected = {i.name: i.value for i in injected_into(job, Version("7.3.0"))}
        assert injected[variable] == value
        notes = " ".join(n.text for n in plan.jobs[0].notes)
        assert "%s=%s" % (variable, value) in notes and "set by the Ascend Operator" in notes


def test_the_mindspore_note_names_what_the_operator_injects_for_mindspore() -> None:
    """MindSpore gets MS_ENABLE_TFT (quotes included at 7.3), MINDIO_FOR_MINDSPORE and MS_ENABLE_THM,
    never HIGH_AVAILABILITY, which is PyTorch's (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/
    env.go:362-373)."""
    job = plan_of_doc(example_doc("mindspore-process-recovery.yaml")).jobs[0]
    (note,) = [n for n in job.notes if "injects" in n.text and "Ascend Operator" in n.text]
    for part in (
        "MS_ENABLE_TFT='{ARF:1,HCCE:1,TTP:1,UCE:1}'",
        "MINDIO_FOR_MINDSPORE=1",
        "MS_ENABLE_THM={HCCL_WATCHDOG:0}",
        "PROCESS_RECOVER=on",
        "ELASTIC_PROCESS_RECOVER_ENABLE=1",
    ):
        assert part in note.text, (part, note.text)
    assert not [n for n in job.notes if "HIGH_AVAILABILITY" in n.text or "HCCL_ASYNC_ERROR_HANDLING" in n.text]
    assert note.source.startswith("MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/env.go:200-238")
    pytorch = plan_of_doc(example_doc("pytorch-process-recovery.yaml")).jobs[0]
    (note,) = [n for n in pytorch.notes if "injects" in n.text and "Ascend Operator" in n.text]
    assert "HIGH_AVAILABILITY=dump,recover" in note.text and "MS_ENABLE" not in note.text


def test_a_volcano_job_keeps_its_env() -> None:
    """No operator touches a Volcano Job: the plan's watchdog off stays in its template."""
    doc = example_doc("pytorch-process-recovery.yaml")
    doc["jobs"][0]["kind"] = "vcjob"
    plan = plan_of_doc(doc)
    job = plan.jobs[0]
    assert job.operator_env == []
    assert {e.name: e.value for e in job.replicas[0].env}["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    assert not [n for n in job.notes if "Ascend Operator of MindCluster" in n.text]


def validate(tmp_path: Path, name: str, env: Dict[str, str], capsys: Any, **recovery: Any) -> Tuple[int, str]:
    path = example_profile(name, tmp_path)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["jobs"][0]["env"] = env
    doc["jobs"][0]["recovery"].update(recovery)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    code = main(["validate", str(path)])
    return code, capsys.readouterr().err


def test_an_env_entry_the_operator_would_override_is_refused(tmp_path: Path, capsys: Any) -> None:
    """Exit 2, the entry and the field the operator's value comes from named, both values, the fix."""
    code, err = validate(tmp_path, "pytorch-process-recovery", {"HIGH_AVAILABILITY": "retry"}, capsys)
    assert code == 2, err
    assert "[env-operator-injects] jobs[0].env.HIGH_AVAILABILITY, jobs[0].recovery.strategies" in err
    assert "env HIGH_AVAILABILITY=retry" in err and "injects HIGH_AVAILABILITY=dump,recover" in err
    assert "silently overridden" in err and "Remove HIGH_AVAILABILITY from env" in err
    code, err = validate(
        tmp_path, "mindspore-process-recovery", {"MS_ENABLE_TFT": "{ARF:1,HCCE:1,TTP:1,UCE:1}"}, capsys
    )
    assert code == 2 and "jobs[0].env.MS_ENABLE_TFT" in err and "'{ARF:1,HCCE:1,TTP:1,UCE:1}'" in err, err
    code, err = validate(
        tmp_path,
        "mindspore-process-recovery",
        {"MS_ENABLE_TFT": "'{TTP:1}'"},
        capsys,
        strategies=[],
        pod_rescheduling=True,
    )
    assert code == 2 and "jobs[0].recovery.pod_rescheduling" in err and "leaves yours in place" in err, err


def test_a_watchdog_switched_on_in_env_is_still_the_watchdog_error(tmp_path: Path, capsys: Any) -> None:
    """HCCL_ASYNC_ERROR_HANDLING=1 on a process-level job: the same error as recovery.watchdog: on,
    once (not a second one about the operator's value)."""
    code, err = validate(tmp_path, "pytorch-process-recovery", {"HCCL_ASYNC_ERROR_HANDLING": "1"}, capsys)
    assert code == 2
    assert "[watchdog-process-level] jobs[0].env.HCCL_ASYNC_ERROR_HANDLING" in err
    assert "env-operator-injects" not in err
    code, err = validate(tmp_path, "mindspore-process-recovery", {"MS_ENABLE_THM": "{HCCL_WATCHDOG:1}"}, capsys)
    assert code == 2 and "[watchdog-process-level] jobs[0].env.MS_ENABLE_THM" in err
    assert "env-operator-injects" not in err


def test_an_agreeing_env_entry_is_left_out_with_a_note(tmp_path: Path, capsys: Any) -> None:
    """Said the same (the list in another order), it passes, the template leaves it out, a note says
    why, and the launcher still sets it."""
    env = {"HIGH_AVAILABILITY": "recover,dump", "PROCESS_RECOVER": "on", "HCCL_ASYNC_ERROR_HANDLING": "0", "FOO": "1"}
    code, err = validate(tmp_path, "pytorch-process-recovery", env, capsys)
    assert code == 0, err
    doc = example_doc("pytorch-process-recovery.yaml")
    doc["jobs"][0]["env"] = env
    plan = plan_of_doc(doc)
    (job,) = ascend_jobs(plan, doc)
    for names in template_env(job).values():
        assert "FOO" in names and not {"HIGH_AVAILABILITY", "PROCESS_RECOVER", "HCCL_ASYNC_ERROR_HANDLING"} & set(names)
    notes = [n.text for n in plan.jobs[0].notes]
    for name in ("HIGH_AVAILABILITY", "PROCESS_RECOVER", "HCCL_ASYNC_ERROR_HANDLING"):
        assert [t for t in notes if t.startswith("env %s=%s says what the Ascend Operator injects" % (name, env[name]))]
    assert {e.name: e.value for e in plan.jobs[0].launcher.env}["HIGH_AVAILABILITY"] == "dump,recover"


def test_the_text_plan_lists_what_the_operator_injects() -> None:
    out = render_text(load_plan_text((EXAMPLES / "mindspore-process-recovery.yaml").read_text(), "x"))
    assert "  injected by the Ascend Operator (not in the pod template):\n" in out
    assert "    MS_ENABLE_TFT='{ARF:1,HCCE:1,TTP:1,UCE:1}'\n" in out
