"""The job directories on the NFS export exist, writable for the training, before a pod mounts them.

issue 24: each job's PersistentVolumes point at ``<export>/<namespace>/<job>/op-cache`` and
``checkpoints``; nothing created them, so on a fresh export every training pod stayed in
ContainerCreating. The prepare Job's script (manifests.storage.PREPARE_SCRIPT) is run here for real
with ``sh`` as the uid the Job runs as (setpriv), on a directory standing for the export: an export
the uid cannot write fails with the directory's name and the fix; a writable one gets the
directories with the plan's mode, owned by that uid, which is what root_squash needs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List

import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLES

from resumable.api import load_plan, load_plan_text
from resumable.manifests import storage

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"
SQUASHED = 65534


def prepare_jobs(text: str) -> List[Dict[str, Any]]:
    return [o for o in storage.objects(load_plan_text(text, "<p>").storage) if o["kind"] == "Job"]


def example_text(**nfs: Any) -> str:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["storage"]["nfs"].update(nfs)
    return yaml.safe_dump(doc, sort_keys=False)


def test_every_nfs_volume_directory_is_prepared_before_its_job() -> None:
    plan = load_plan(str(EXAMPLE))
    (job,) = prepare_jobs(EXAMPLE.read_text())
    kubernetes_validate.validate(job, "1.28", strict=True)
    pod = job["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    volumes = [v for v in plan.storage if v.storage == "nfs"]
    assert {"%s/%s" % (env["EXPORT"], d) for d in env["DIRS"].split()} == {v.path for v in volumes}
    assert pod["volumes"] == [{"name": "export", "nfs": {"server": volumes[0].server, "path": "/exports/ascend"}}]
    assert pod["securityContext"]["runAsUser"] == pod["securityContext"]["runAsGroup"] == SQUASHED
    assert (env["OWNER"], env["GROUP"], env["MODE"]) == ("65534", "65534", "0775")
    assert job["spec"]["backoffLimit"] == 0 and job["metadata"]["namespace"] == "training"
    assert job["metadata"]["labels"]["ascend-resumable/prepare"] == "storage"


def test_the_site_chooses_owner_group_and_mode() -> None:
    (job,) = prepare_jobs(example_text(owner=1000, group=1000, mode="2770", prepare_image="reg.local/busybox:1.36"))
    pod = job["spec"]["template"]["spec"]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (1000, 1000)
    assert pod["containers"][0]["image"] == "reg.local/busybox:1.36"
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["MODE"] == "2770"


def test_a_storage_class_needs_no_preparation() -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["storage"] = {"storage_class": "cephfs"}
    assert prepare_jobs(yaml.safe_dump(doc)) == []


def test_a_long_job_name_gives_a_valid_job_name() -> None:
    name = storage.prepare_job_name("j" * 63)
    assert len(name) <= 63 and name.endswith("-prepare-storage")
    assert storage.prepare_job_name("a" * 63) != storage.prepare_job_name("a" * 62 + "b")


def run_script(export: Path, uid: int) -> subprocess.CompletedProcess[str]:
    (job,) = prepare_jobs(EXAMPLE.read_text())
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    env.update(EXPORT_MOUNT=str(export), PATH=os.environ["PATH"])
    argv = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups", "--", *container["command"]]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture()
def export() -> Iterator[Path]:
    """A directory standing for the export, where uid 65534 can reach it (pytest's own temporary
    directory is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="resumable-export-"))
    base.chmod(0o755)
    (base / "export").mkdir(mode=0o755)
    yield base / "export"
    shutil.rmtree(base)


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="runs the script as uid 65534 (needs root and setpriv)"
)


@needs_root
def test_an_export_the_training_cannot_write_fails_naming_the_directory_and_the_fix(export: Path) -> None:
    # owned by root, mode 0755: what root_squash leaves the squashed root user unable to write
    done = run_script(export, SQUASHED)
    assert done.returncode == 1
    assert (
        "cannot create 192.0.2.10:/exports/ascend/training/llama-pretrain/op-cache as uid 65534 gid 65534"
        in done.stdout
    )
    assert "Fix: on the NFS server create the directories above and give them to 65534:65534 mode 0775" in done.stdout
    assert "storage.nfs.owner" in done.stdout
    assert "Permission denied" in done.stdout and "export/training" in done.stdout
    assert list(export.iterdir()) == []


@needs_root
def test_a_writable_export_gets_the_directories_owned_by_the_training_user(export: Path) -> None:
    os.chown(export, SQUASHED, SQUASHED)
    done = run_script(export, SQUASHED)
    assert done.returncode == 0, done.stdout + done.stderr
    for purpose in ("op-cache", "checkpoints"):
        path = export / "training" / "llama-pretrain" / purpose
        st = path.stat()
        assert (st.st_uid, st.st_gid, oct(st.st_mode & 0o7777)) == (SQUASHED, SQUASHED, "0o775")
        assert "ready: 192.0.2.10:/exports/ascend/training/llama-pretrain/%s (65534:65534 775)" % purpose in done.stdout
        assert list(path.iterdir()) == [], "the write probe is removed"
    # a second run (kubectl apply again, pulumi up again) finds them and succeeds
    assert run_script(export, SQUASHED).returncode == 0
