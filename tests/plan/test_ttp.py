"""When MindIO TTP is in play: one answer (resumable.envderived.mindio_ttp_port) behind the
TTP_PORT the plan sets, the ``ttp-port`` every pod declares and the launcher's TTP port.

Hot switching runs the MindIO controller without any recover-strategy: the operator gives the job
PROCESS_RECOVER=on and the recover strategy (MC:@v7.3.0 component/ascend-operator/pkg/controllers/v1/
env.go addSubHealthyEnv) and the TaskD Manager starts the controller on POD_IP:TTP_PORT
(component/taskd/taskd/python/framework/manager/manager.py, controller.py init_controller). Before
the rule was written once, the pods of a hot-switch-only job carried TTP_PORT but no ttp-port."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest
from conftest import EXAMPLE_FILES, EXAMPLES, example_doc, plan_of_doc

from resumable.plan.model import JobPlan

TTP = "ttp-port"


def ttp_views(job: JobPlan) -> List[Optional[int]]:
    """The TTP port as each part of the plan states it: env TTP_PORT, the ports of every replica,
    the launcher; None where a part says TTP is not in play."""
    views: List[Optional[int]] = [job.launcher.ttp_port]
    for replica in job.replicas:
        env = {e.name: e.value for e in replica.env if e.value is not None}
        views.append(int(env["TTP_PORT"]) if "TTP_PORT" in env else None)
        ports = [p.container_port for p in replica.ports if p.name == TTP]
        views.append(ports[0] if ports else None)
    return views


def hot_switch_only(**recovery: Any) -> Dict[str, Any]:
    doc = example_doc("pytorch-process-recovery.yaml")
    job = doc["jobs"][0]
    job["recovery"].update({"strategies": [], "sub_health": "hotSwitch", "ttp_port": 8000, **recovery})
    job["checkpoint"]["dump"] = False
    for wheel in job["image"].get("wheels", {}).values():
        if "file" in wheel:
            wheel["file"] = str(EXAMPLES / wheel["file"])
    return doc


def test_a_hot_switch_only_job_declares_the_ttp_port_it_sets() -> None:
    plan = plan_of_doc(hot_switch_only())
    errors = [v for v in plan.violations if v.severity == "error"]
    assert errors == [], errors
    (job,) = plan.jobs
    assert job.strategies == [] and job.labels.get("subHealthyStrategy") == "hotSwitch"
    assert set(ttp_views(job)) == {8000}, ttp_views(job)


def test_a_pod_level_only_job_has_no_ttp_anywhere() -> None:
    doc = example_doc("pytorch-pod-rescheduling.yaml")
    doc["jobs"][0]["recovery"]["ttp_port"] = 8000
    for wheel in doc["jobs"][0]["image"].get("wheels", {}).values():
        if "file" in wheel:
            wheel["file"] = str(EXAMPLES / wheel["file"])
    (job,) = plan_of_doc(doc).jobs
    assert set(ttp_views(job)) == {None}, ttp_views(job)


@pytest.mark.parametrize("name", [p.name for p in EXAMPLE_FILES])
def test_every_example_states_ttp_the_same_everywhere(name: str) -> None:
    doc = example_doc(name)
    for job_doc in doc["jobs"]:
        for wheel in job_doc.get("image", {}).get("wheels", {}).values():
            if "file" in wheel:
                wheel["file"] = str(EXAMPLES / wheel["file"])
    for job in plan_of_doc(doc).jobs:
        assert len(set(ttp_views(job))) == 1, (name, job.name, ttp_views(job))
