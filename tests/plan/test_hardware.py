"""Hardware that cannot exist is refused (issue 16: each of these validated with 0 warnings), the
suggestions name the right product, the support matrix is in docs/profile.md and the schema, the
build line names the platform, and a rung of the budget that saves nothing says why."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES

from resumable import cli
from resumable import hardware as H
from resumable import releases as R
from resumable.api import PlanError, load_plan_text
from resumable.docsgen import profile_markdown
from resumable.errors import ProfileError
from resumable.versions import Version

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


def example(**cluster: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["cluster"].update(cluster)
    return doc


def errors_of(doc: Dict[str, Any]) -> Dict[str, List[str]]:
    with pytest.raises(PlanError) as info:
        load_plan_text(yaml.safe_dump(doc), "p.yaml")
    out: Dict[str, List[str]] = {}
    for v in info.value.failing:
        out.setdefault(v.rule, []).append(v.message)
    return out


def test_the_example_is_possible_hardware() -> None:
    load_plan_text(EXAMPLE.read_text(encoding="utf-8"), str(EXAMPLE))


def test_atlas_800_chip_with_a3_superpod_nodes() -> None:
    found = errors_of(example(chip="ascend-910", accelerator_type="module-a3-16-super-pod"))
    assert "accelerator-type-chip" in found
    assert "ascend-910b" in found["accelerator-type-chip"][0]


def test_sixteen_npus_on_an_eight_npu_node() -> None:
    doc = example(accelerator_type="module-910b-8")
    doc["jobs"][0]["npus_per_node"] = 16
    assert "npus-per-node-hardware" in errors_of(doc)


def test_odd_npu_count_on_a3() -> None:
    doc = example(accelerator_type="module-a3-16")
    doc["jobs"][0]["npus_per_node"] = 3
    assert "npus-per-node-hardware" in errors_of(doc)


def test_sp_block_outside_a_superpod() -> None:
    doc = example(accelerator_type="module-910b-8")
    doc["jobs"][0]["sp_block"] = 16
    assert "sp-block-super-pod" in errors_of(doc)
    doc["cluster"]["accelerator_type"] = "module-a3-16-super-pod"
    load_plan_text(yaml.safe_dump(doc), "p.yaml")


def test_x86_cluster_with_aarch64_wheels() -> None:
    found = errors_of(example(arch="x86_64"))
    assert "wheel-platform" in found and "aarch64" in found["wheel-platform"][0]


def test_a_made_up_release_is_named_as_such_with_the_supported_list() -> None:
    """7.3.RC1 got an Elastic Agent error; it is not a MindCluster release."""
    found = errors_of(example(mindcluster="7.3.RC1"))
    assert list(found) == ["mindcluster-release"], found
    message = found["mindcluster-release"][0]
    assert "not a MindCluster release" in message and "7.3.0" in message and "26.1.0" in message


@pytest.mark.parametrize("release", ["7.3.0.SPC1", "6.0.RC3", "7.2.RC1", "v7.0.RC1.B050", "26.1.0"])
def test_real_releases_and_their_service_packs_are_releases(release: str) -> None:
    assert H.release_base(release) is not None


def test_a3_chip_suggestion_names_ascend_910b() -> None:
    """`ascend-910c` was answered "Did you mean 'ascend-910'?" (Atlas 800, the wrong product)."""
    with pytest.raises(ProfileError) as info:
        load_plan_text(yaml.safe_dump(example(chip="ascend-910c")), "p.yaml")
    text = str(info.value)
    assert "Did you mean ascend-910b" in text and "'ascend-910'?" not in text


def test_the_jobs_only_advice_is_gone() -> None:
    """The unsupported-release error advised "use resumable for the jobs only", which nothing implements."""
    plan_problems = R.deployability(Version("7.2.RC1"), None, None)
    assert plan_problems and all("jobs only" not in p.fix for p in plan_problems)


def test_support_matrix_is_at_the_top_of_the_profile_reference() -> None:
    text = profile_markdown()
    matrix = text.index("## What is supported")
    assert matrix < text.index("## Fields")
    for label in H.ACCELERATOR_TYPES:
        assert "`%s`" % label in text[matrix : text.index("## Fields")]
    for release in H.MINDCLUSTER_RELEASES:
        assert "`%s`" % release in text[matrix : text.index("## Fields")]


def test_support_matrix_is_in_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["schema"]) == 0
    cluster = json.loads(capsys.readouterr().out)["properties"]["cluster"]["properties"]
    assert cluster["chip"]["enum"] == ["ascend-910", "ascend-910b", "ascend-npu"]
    for label in H.ACCELERATOR_TYPES:
        assert label in cluster["accelerator_type"]["description"]
    for release in H.MINDCLUSTER_RELEASES:
        assert release in cluster["mindcluster"]["description"]
    assert "Atlas A2 and A3" in cluster["chip"]["description"]


def test_budget_says_when_a_rung_saves_next_to_nothing() -> None:
    """Pod-level at 34.4 min against 34.5 min job-level (half the 60 min checkpoint interval
    dominates) was shown without a word."""
    doc: Dict[str, Any] = yaml.safe_load((EXAMPLES / "pytorch-pod-rescheduling.yaml").read_text("utf-8"))
    doc["jobs"][0]["checkpoint"] = {"interval_minutes": 60}
    plan = load_plan_text(yaml.safe_dump(doc), "p.yaml")
    budget = plan.jobs[0].budget
    assert [line.level for line in budget.ladder] == ["pod", "job"]
    (note,) = budget.notes
    assert "T0 rollback" in note.text and "checkpoint.interval_minutes" in note.text
    assert "pod-level" in note.text and "job-level" in note.text
    # every rung of the process-recovery example saves minutes against the next: no such note (its one
    # budget note names the failures the expected time per fault cannot weigh, issue 31)
    notes = load_plan_text(EXAMPLE.read_text(encoding="utf-8"), "p.yaml").jobs[0].budget.notes
    assert [n.text for n in notes if "saves only" in n.text] == []
    assert [n.text.startswith("the expected time per fault does not weigh") for n in notes] == [True]
