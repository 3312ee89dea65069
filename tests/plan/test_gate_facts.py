"""Facts the one gate promises every consumer (issue "resumable II", sections 1 and 3): the
rank-0 escalation is a note of the chosen level, not a warning; MindSpore's watchdog written in
``env`` meets the same rule as the field; the graceful path keeps its MindIO wheel; the rules and
the manifest builders agree on what can be deployed, because both ask one function."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, List, Optional

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES
from test_rules import DELETE, J, profile_with

from resumable.plan import build_plan
from resumable.profile import parse_profile
from resumable.rules import evaluate

ESCALATION = "a fault on the rank-0 pod escalates to job-level rescheduling"


def example(name: str) -> Any:
    return yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "name, escalates",
    [
        ("job-level-minimal", False),
        ("legacy-6.0-pod-rescheduling", True),
        ("pytorch-pod-rescheduling", True),
        ("pytorch-process-recovery", True),
        ("mindspore-process-recovery", True),
    ],
)
def test_rank0_escalation_is_a_note_of_the_level_not_a_warning(name: str, escalates: bool) -> None:
    profile = parse_profile(yaml.safe_dump(example(name)), name)
    plan = build_plan(profile, name)
    notes = [n.text for job in plan.jobs for n in job.notes]
    assert (ESCALATION in notes) == escalates
    assert not [v for v in plan.violations if v.rule == "rank0-escalation"]


@pytest.mark.parametrize(
    "thm, rule_fires",
    [("{HCCL_WATCHDOG:1}", True), ("{HCCL_WATCHDOG:0}", False), ("{OTHER:1}", False)],
)
def test_mindspore_watchdog_in_env_meets_the_field_rule(thm: str, rule_fires: bool) -> None:
    doc = example("mindspore-process-recovery")
    doc["jobs"][0].setdefault("env", {})["MS_ENABLE_THM"] = thm
    found = [v for v in evaluate(parse_profile(yaml.safe_dump(doc), "ms")) if v.rule == "watchdog-process-level"]
    assert bool(found) == rule_fires
    if rule_fires:
        assert "jobs[0].env.MS_ENABLE_THM" in found[0].paths
    doc["jobs"][0]["env"].pop("MS_ENABLE_THM")
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    by_field = [v for v in evaluate(parse_profile(yaml.safe_dump(doc), "ms")) if v.rule == "watchdog-process-level"]
    assert by_field and "jobs[0].recovery.watchdog" in by_field[0].paths


def test_graceful_fault_tolerance_needs_and_keeps_the_mindio_wheel() -> None:
    graceful = {J + "recovery.strategies": [], J + "checkpoint.dump": False, J + "recovery.graceful": True}
    taskd_only = {"taskd": {"file": "t.whl"}}
    without = profile_with({**graceful, J + "image.mindio_ttp": DELETE, J + "image.wheels": taskd_only})
    assert [v for v in evaluate(without) if v.rule == "mindio-ttp-agent"], "graceful without MindIO TTP passes"
    plan = build_plan(profile_with(graceful), "graceful")
    names = [w.name for w in plan.jobs[0].image.wheels]
    assert "mindio_ttp" in names and "taskd" in names


RELEASES = ["6.0.0", "7.3.0", "26.0.0", "26.1.0", "5.0.1", "27.0.0"]
VOLCANOS: List[Optional[str]] = [None, "1.7.0", "1.9.0", "1.12.0"]
KUBERNETES = ["1.19", "1.21", "1.25", "1.28", "1.29", "1.34", "1.35"]
#: mindcluster-release: a string that is no release (27.0.0) is refused by it alone (issue 16)
DEPLOY_RULES = {"stack-release", "volcano-version", "kubernetes-version", "mindcluster-release"}


@pytest.mark.parametrize("release", RELEASES)
def test_rules_and_builders_agree_on_what_can_be_deployed(release: str) -> None:
    from resumable.manifests.support import problems

    for volcano, kube in itertools.product(VOLCANOS, KUBERNETES):
        patch: Any = {"cluster.mindcluster": release, "cluster.kubernetes": kube, "scheduler.volcano": volcano}
        if volcano is None:
            patch["scheduler.volcano"] = DELETE
        profile = profile_with(patch)
        ruled = [v for v in evaluate(profile) if v.rule in DEPLOY_RULES]
        built = problems(build_plan(profile, "grid").scheduler)
        where = f"{release} x Volcano {volcano} x Kubernetes {kube}"
        assert bool(ruled) == bool(built), f"{where}: rules {ruled} but builders {built}"


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLE_FILES])
def test_the_gate_computes_each_jobs_facts_once(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    import resumable.facts as facts
    from resumable.api import load_plan

    calls: List[int] = []
    real = facts.job_facts

    def counted(profile: Any, index: int) -> Any:
        calls.append(index)
        return real(profile, index)

    monkeypatch.setattr(facts, "job_facts", counted)
    plan = load_plan(str(EXAMPLES / f"{name}.yaml"))
    assert sorted(calls) == list(range(len(plan.jobs)))


def test_validate_plan_and_render_name_the_same_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One gate, one wording: every command reports a rule error with the same line."""
    from resumable.cli import main

    doc = example("pytorch-process-recovery")
    doc["jobs"][0]["recovery"]["watchdog"] = "on"
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    texts = []
    for argv in (["validate", str(path)], ["plan", str(path)], ["render", str(path), "--out", str(tmp_path / "o")]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        texts.append(err)
    line = next(t for t in texts[0].splitlines() if "[watchdog-process-level]" in t).strip()
    assert line.startswith("ERROR [watchdog-process-level] jobs[0].recovery.watchdog")
    for err in texts[1:]:
        assert line in err
