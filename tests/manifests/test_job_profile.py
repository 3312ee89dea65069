"""Each job's ``resumable-profile-<job>`` ConfigMap holds the profile with that job alone under
``jobs``: inside the pod, ``resumable launch`` / ``doctor`` plan the job from it exactly as from the
whole profile; every other setting keeps its value; the ConfigMap depends on that job only (adding
a job in front changes nothing of it), so a render of N jobs writes N small profiles, not N copies
of the whole one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable import yamlio
from resumable.api import job_plan, load_plan, load_plan_text
from resumable.cli import main
from resumable.errors import ResumableError
from resumable.manifests import build_deployment
from resumable.manifests.deployment import JOBS_STAGE, job_profile_texts

#: A profile of many jobs written the ways users write them: comments, an anchor in one job used by
#: the others (as benchmarks/render_scale.py does), a merge key from the first job, flow
#: style, quoted strings that would read as numbers, a literal block, several namespaces and kinds.
MANY_HEAD = """\
# a cluster of many teams
cluster: {name: big, mindcluster: "7.3.0", kubernetes: "1.28", chip: ascend-910b,
          accelerator_type: module-910b-8, arch: aarch64}
scheduler:
  volcano: "1.9.0"
storage:
  nfs: {server: 192.0.2.10, path: /exports/ascend}
jobs:
"""
#: the first job's settings, which the others take through a merge key
FIRST = """\
  - &first
    nodes: 2
    npus_per_node: 8
    script_args: ["--data", "/data/set 1", "--seed", "0042"]
"""
MANY_JOB = """\
%(start)s    name: job-%(i)03d
    namespace: team-%(ns)d
    kind: %(kind)s
    image: %(image)s
    recovery:
      strategies: [%(strategies)s]
    env: {NOTE: "%(env)s"}
    pod: {annotations: {example.com/note: "%(note)s"}}
"""
IMAGE = (
    '&image {framework: pytorch, torch: "2.7.1", torch_npu: "2.7.1.post2", cann: "8.5.0", taskd: "7.3.0",'
    ' mindio_ttp: "7.3.0"}'
)


def many_jobs_profile(count: int) -> str:
    jobs = []
    for i in range(count):
        jobs.append(
            MANY_JOB
            % {
                "start": FIRST if i == 0 else "  - <<: *first\n",
                "i": i,
                "ns": i % 7,
                "kind": "vcjob" if i % 3 == 0 else "ascendjob",
                "image": IMAGE if i == 0 else "*image",
                "strategies": "recover, retry" if i % 2 and i % 3 else "",
                "note": "line one\\nline two" if i % 5 == 0 else "yes",
                "env": "one line" if i % 5 == 0 else "yes",
            }
        )
    return MANY_HEAD + "".join(jobs)


def assert_each_job_plans_alone_as_in_the_whole(path: Path, text: str) -> Dict[str, str]:
    """Per job: its profile holds the whole profile's data with that job alone under jobs, and
    planned from it (at the same place, so relative wheel paths resolve alike) the job's plan is
    the one of the whole profile, selected by name as $RESUMABLE_JOB does and as the only job."""
    whole = load_plan_text(text, str(path))
    data = yaml.safe_load(text)
    texts = job_profile_texts(whole, text)
    assert sorted(texts) == sorted(j.name for j in whole.jobs)
    for declared, job in zip(data["jobs"], whole.jobs):
        own = texts[job.name]
        assert yaml.safe_load(own) == {**data, "jobs": [declared]}
        # written as the render writes YAML, in one piece
        assert own.split("\n", 2)[2] == yamlio.dump({**data, "jobs": [declared]})
        alone = load_plan_text(own, str(path))
        assert [j.name for j in alone.jobs] == [job.name]
        assert job_plan(alone, job.name) == job == job_plan(alone)
    return texts


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_every_example_job_plans_from_its_own_profile_as_from_the_whole(example: Path) -> None:
    assert_each_job_plans_alone_as_in_the_whole(example, example.read_text())


def test_many_jobs_each_plan_from_their_own_profile_as_from_the_whole(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    text = many_jobs_profile(40)
    path.write_text(text)
    texts = assert_each_job_plans_alone_as_in_the_whole(path, text)
    # what the render writes is that text, in the ConfigMap the job's pods mount
    objs = build_deployment(load_plan(str(path))).stage(JOBS_STAGE).objects
    cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
    for name, own in texts.items():
        assert cms["resumable-profile-" + name]["data"] == {"profile.yaml": own}
    # the alias of the first job's image is written out, never left dangling
    assert "torch: 2.7.1" in texts["job-039"] and "*image" not in texts["job-039"]
    # a string that reads as something else stays a string
    assert "NOTE: 'yes'" in texts["job-039"]


def test_profile_config_maps_grow_linearly_with_the_jobs() -> None:
    """The profile text of the job's ConfigMap does not grow with the number of other jobs."""
    sizes: List[int] = []
    for count in (4, 40):
        text = many_jobs_profile(count)
        texts = job_profile_texts(load_plan_text(text, "<many>"), text)
        sizes.append(len(texts["job-001"]))
    assert sizes[0] == sizes[1]


def job_objects_by_key(text: str) -> Dict[str, Any]:
    objs = build_deployment(load_plan_text(text, "<many>"), profile_text=text).stage(JOBS_STAGE).objects
    return {"%s/%s/%s" % (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}


def test_adding_or_removing_another_job_changes_no_object_of_a_job() -> None:
    """A job added in front (and one removed) leaves every object of the other jobs as it was,
    their profile ConfigMaps included: Pulumi updates nothing of a running job."""
    text = many_jobs_profile(6)
    before = job_objects_by_key(text)
    doc = yaml.safe_load(text)
    first = copy.deepcopy(doc["jobs"][1])
    first.update(name="first", namespace="team-0")
    removed = doc["jobs"].pop(3)["name"]
    doc["jobs"].insert(0, first)
    after = job_objects_by_key(yaml.safe_dump(doc, sort_keys=False))
    profiles = 0
    for key, obj in after.items():
        if "/first" in key or "-first" in key or "first-" in key:
            continue
        assert before[key] == obj, f"{key} changed when a job was added in front and {removed} removed"
        profiles += key.startswith("ConfigMap/") and "/resumable-profile-" in key
    assert profiles == 5
    assert not [k for k in after if removed in k]


def test_a_profile_that_is_not_the_planned_one_is_refused() -> None:
    text = many_jobs_profile(3)
    plan = load_plan_text(text, "<many>")
    with pytest.raises(ResumableError, match="changed while it was planned"):
        job_profile_texts(plan, many_jobs_profile(2))


def test_doctor_in_the_pod_reads_the_rendered_profile_as_the_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a pod sees: the rendered ConfigMap's profile.yaml at $RESUMABLE_PROFILE and the job in
    $RESUMABLE_JOB; `resumable doctor` checks there what it checks with the whole profile and --job."""
    example = EXAMPLES / "pytorch-process-recovery.yaml"
    assert main(["render", str(example), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    (cm,) = [
        yaml.safe_load(p.read_text())
        for p in sorted((tmp_path / "out").rglob("*.yaml"))
        if "-configmap-" in p.name and "resumable-profile-" in p.name
    ]
    mounted = tmp_path / "profile.yaml"
    mounted.write_text(cm["data"]["profile.yaml"])
    job = cm["metadata"]["name"][len("resumable-profile-") :]
    monkeypatch.setenv("RESUMABLE_PROFILE", str(mounted))
    monkeypatch.setenv("RESUMABLE_JOB", job)
    # the same environment for both (doctor checks it too); --profile/--job name the whole profile
    main(["doctor", "--format", "json", "--profile", str(example), "--job", job])
    whole = json.loads(capsys.readouterr().out)
    main(["doctor", "--format", "json"])
    pod = json.loads(capsys.readouterr().out)
    assert pod["profile"] == str(mounted) and pod["job"] == job
    assert pod["checks"] == whole["checks"] and pod["ok"] == whole["ok"]


def test_pulumi_stops_with_a_run_error_when_the_profile_is_not_the_planned_one() -> None:
    import pulumi

    from resumable_pulumi.jobs import TrainingJobs, TrainingJobsArgs

    plan = load_plan_text(many_jobs_profile(3), "<many>")
    images = {j.name: "registry.example.com/x:1" for j in plan.jobs}
    with pytest.raises(pulumi.RunError, match="changed while it was planned"):
        TrainingJobs("changed", TrainingJobsArgs(plan, dict(images), many_jobs_profile(2)))
