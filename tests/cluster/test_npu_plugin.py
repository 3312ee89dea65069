"""Huawei's Volcano plugin runs in the scheduler of the rendered stack: tools/podrunner.py (with
``--mindcluster``) starts the
vc-scheduler built with the plugin (tools/source_tools.py volcano_npu) for the pod of the rendered
volcano-scheduler Deployment, the plugin's ``.so`` where ``--plugins-dir=plugins`` finds it.

The proof is the plugin's behaviour, not a log line: at the end of every scheduling session the
plugin writes its rescheduling cache, the ConfigMap ``volcano-system/vcjob-fault-npu-cm``
(MC:@v7.3.0 component/ascend-for-volcano internal/rescheduling/type.go:36-39, cache.go:224; written
through the plugin's output cache on session close), which no other component writes: without the
plugin (a plain vc-scheduler, a plugin of another name, a missing ``--plugins-dir``) it never appears.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import EXAMPLES

from .fixtures import StartPlane, plan_nodes

EXAMPLE = EXAMPLES / "pytorch-pod-rescheduling.yaml"
PLUGIN_CM = ("volcano-system", "vcjob-fault-npu-cm")


def apply_stack(plane: object, profile: Path, out: Path) -> None:
    """The CRDs and the cluster layer of ``profile``'s render, as the printed lines apply them."""
    from manifests.test_render_apiserver import printed_sections

    done = subprocess.run([sys.executable, "-m", "resumable", "render", str(profile), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for argv in printed_sections(done.stdout + done.stderr)["apply, in this order:"]:
        if any(a.endswith(("1-crds", "2-cluster")) for a in argv):
            plane.kubectl(*argv[1:], timeout=200)  # type: ignore[attr-defined]


def test_the_rendered_scheduler_runs_the_npu_plugin(start_plane: StartPlane, tmp_path: Path) -> None:
    plane = start_plane(plan_nodes(EXAMPLE), mindcluster=True)
    apply_stack(plane, EXAMPLE, tmp_path / "rendered")
    namespace, name = PLUGIN_CM
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if plane.kubectl("get", "configmap", name, "-n", namespace, check=False).returncode == 0:
            break
        time.sleep(1)
    log = plane.workdir / "runner" / "podrunner.log"
    runner = log.read_text(errors="replace") if log.exists() else ""
    assert "volcano-npu_v7.3.0_linux-aarch64.so" in runner, runner[-3000:]
    assert plane.kubectl("get", "configmap", name, "-n", namespace, check=False).returncode == 0, (
        f"the NPU plugin wrote no {namespace}/{name} in 240 s: it did not run\n{runner[-3000:]}"
    )
