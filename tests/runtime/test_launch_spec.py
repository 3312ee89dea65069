"""``resumable launch --dry-run``: what each example would run on which pod (no torch needed)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import EXAMPLE_FILES, EXAMPLES

from resumable import constants as C
from resumable.api import job_plan, load_plan
from resumable.runtime.launch import MissingVariable, _host, build_spec, expand

from .conftest import (
    GIB,
    RUN_PY,
    assert_dry_run_script,
    clean_env,
    cli,
    executable,
    fake_torch_layout,
    profile_text,
    python_path,
    write,
)

PATCHED = RUN_PY.replace("import os\n", C.RUNPY_IMPORT_TASKD + "\nimport os\n")
POD = {"MASTER_ADDR": "10.96.0.10", "MASTER_PORT": "2222", "WORLD_SIZE": "32", "LOCAL_WORLD_SIZE": "8"}


@pytest.fixture()
def pod(tmp_path: Path, vendor_site: Path) -> Dict[str, str]:
    """A training container: fixture TaskD, torch's layout with run.py patched, launchers on PATH."""
    torch = fake_torch_layout(tmp_path / "torch-site", PATCHED)
    bin_dir = tmp_path / "bin"
    for name in ("torchrun", "torch_npu_run", "msrun"):
        executable(bin_dir / name, "#!/bin/sh\nexit 0\n")
    return clean_env(
        PYTHONPATH=python_path(torch, vendor_site),
        PATH="%s:/usr/bin:/bin" % bin_dir,
        MINDX_TASK_ID="3f0c-uid",
        POD_IP="10.0.0.5",
    )


def dry_run(profile: Path, env: Dict[str, str], *extra: str) -> Tuple[int, str, str]:
    proc = cli(["launch", "--profile", str(profile), "--dry-run", *extra], env)
    return proc.returncode, proc.stdout, proc.stderr


def exports(out: str) -> Dict[str, str]:
    found = {}
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, rest = line[len("export ") :].partition("=")
            found[name] = shlex.split(rest.split("  # ")[0])[0] if rest.split("  # ")[0] else ""
    return found


def commands(out: str) -> List[List[str]]:
    return [
        shlex.split(line.rstrip(" &")) for line in out.splitlines() if line and not line.startswith(("#", "export"))
    ]


def test_pytorch_process_recovery_rank0(pod: Dict[str, str], vendor_site: Path) -> None:
    code, out, err = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", dict(pod, RANK="0", **POD))
    assert code == 0, out + err
    env = exports(out)
    lib = vendor_site / "taskd" / "python" / "cython_api" / "libs" / "libtaskd.so"
    assert env["LD_PRELOAD"] == str(lib)
    assert env["MASTER_ADDR"] == "10.0.0.5", "rank 0 points MASTER_ADDR at POD_IP for the TaskD Manager"
    assert env["TASKD_PROCESS_ENABLE"] == "on" and env["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    # the example mounts no /job/code: logs go next to the checkpoints, on its NFS storage
    assert env["TASKD_LOG_PATH"] == "/job/ckpt/alllogs/3f0c-uid/taskd"
    assert env[C.ENV_RESUMABLE_JIT_COMPILE] == "1"  # compile.mode cache
    manager, launcher = commands(out)
    assert manager[:3] == [sys.executable, "-m", "resumable.runtime.taskd_manager"]
    assert json.loads(manager[3]) == {"job_id": "3f0c-uid", "node_nums": 4, "proc_per_node": 8}
    assert Path(launcher[0]).name == "torchrun"
    assert launcher[1:] == [
        "--nproc_per_node=8",
        "--nnodes=4",
        "--node_rank=0",
        "--master_addr=10.0.0.5",
        "--master_port=2222",
        "--max_restarts=32767",
        "pretrain_gpt.py",
    ]
    assert "/job/ckpt/alllogs/3f0c-uid/resumable/timeline-" in out


def test_pytorch_process_recovery_rank1_runs_no_manager(pod: Dict[str, str]) -> None:
    code, out, err = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", dict(pod, RANK="1", **POD))
    assert code == 0, out + err
    env = exports(out)
    assert "MASTER_ADDR" not in env, "only rank 0 repoints MASTER_ADDR"
    assert env["LD_PRELOAD"].endswith(C.LIBTASKD_RELATIVE)
    (launcher,) = commands(out)
    assert "--node_rank=1" in launcher and "--master_addr=10.96.0.10" in launcher
    assert "# RANK=1: the TaskD Manager runs only on rank 0" in out


def test_mindspore_manager_only_on_the_scheduler_pod(pod: Dict[str, str]) -> None:
    ms = {"MS_SCHED_PORT": "8118", "MS_NODE_RANK": "0", "MS_WORKER_NUM": "16", "MS_LOCAL_WORKER": "8"}
    profile = EXAMPLES / "mindspore-process-recovery.yaml"
    code, out, err = dry_run(profile, dict(pod, MS_SCHED_HOST="10.0.0.5", **ms))
    assert code == 0, out + err
    manager, launcher = commands(out)
    assert json.loads(manager[3]) == {"job_id": "3f0c-uid", "node_nums": 2, "proc_per_node": 8}
    assert Path(launcher[0]).name == "msrun"
    assert "--master_addr=10.0.0.5" in launcher and "--master_port=8118" in launcher and "--node_rank=0" in launcher
    assert launcher[-3:] == ["run_mindformer.py", "--config", "configs/qwen/pretrain.yaml"]
    assert "MASTER_ADDR" not in exports(out)

    code, out, err = dry_run(profile, dict(pod, MS_SCHED_HOST="10.0.0.9", **ms))
    assert code == 0, out + err
    assert len(commands(out)) == 1, "a worker pod (MS_SCHED_HOST != POD_IP) starts no manager"
    assert "only where they are equal" in out


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_every_example_prints_env_and_command(pod: Dict[str, str], example: Path) -> None:
    env = dict(pod, RANK="0", MS_SCHED_HOST="10.0.0.5", MS_SCHED_PORT="8118", MS_NODE_RANK="0", **POD)
    code, out, err = dry_run(example, env)
    if "mindx_elastic" in example.read_text():
        # the Elastic Agent line is not in this run.py: a launch would fail, and says why
        assert code == 2 and "import mindx_elastic.api` 0 times" in out
        return
    assert code == 0, out + err
    assert out.startswith("# resumable launch --dry-run: job ")
    assert_dry_run_script(out)  # every value quoted; the placeholders set at the start are comments
    assert any(line.startswith("export PYTHONPATH=") for line in out.splitlines())
    plan = job_plan(load_plan(str(example)))
    launcher = commands(out)[-1]
    assert Path(launcher[0]).name == plan.launcher.launcher
    assert launcher[-1 - len(plan.launcher.script_args)] == plan.launcher.script


def test_script_after_double_dash_replaces_the_plans(pod: Dict[str, str]) -> None:
    env = dict(pod, RANK="1", **POD)
    code, out, _ = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", env, "--", "train.py", "--lr", "0.1")
    assert code == 0
    assert commands(out)[-1][-3:] == ["train.py", "--lr", "0.1"]


def test_ld_preload_is_prepended(pod: Dict[str, str]) -> None:
    env = dict(pod, RANK="1", LD_PRELOAD="/usr/lib/libother.so", **POD)
    _, out, _ = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", env)
    value = exports(out)["LD_PRELOAD"].split(":")
    assert value[0].endswith("libtaskd.so") and value[1:] == ["/usr/lib/libother.so"]


def test_missing_taskd_and_pod_variables_are_reported_together(tmp_path: Path) -> None:
    torch = fake_torch_layout(tmp_path / "torch-site", PATCHED)
    env = clean_env(PYTHONPATH=str(torch), PATH="/usr/bin:/bin", RANK="0")
    code, out, err = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", env)
    assert code == 2
    problems = [line for line in out.splitlines() if line.startswith("# problem:")]
    text = "\n".join(problems)
    assert "taskd is not installed" in text
    assert "POD_IP is not set" in text and "MINDX_TASK_ID is not set" in text
    assert "MASTER_PORT is not set" in text
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_unpatched_run_py_stops_a_taskd_launch(tmp_path: Path, vendor_site: Path) -> None:
    torch = fake_torch_layout(tmp_path / "torch-site", RUN_PY)
    env = clean_env(PYTHONPATH=python_path(torch, vendor_site), RANK="1", **POD)
    proc = cli(["launch", "--profile", str(EXAMPLES / "pytorch-process-recovery.yaml"), "--", "train.py"], env)
    assert proc.returncode == 2
    assert "0 times, not once: run `resumable image patch-torchrun`" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_profile_and_job_default_to_the_environment(tmp_path: Path, pod: Dict[str, str]) -> None:
    env = dict(pod, RANK="1", RESUMABLE_PROFILE=str(EXAMPLES / "pytorch-process-recovery.yaml"), **POD)
    proc = cli(["launch", "--dry-run"], env)
    assert proc.returncode == 0, proc.stderr
    assert "job llama-pretrain" in proc.stdout
    env["RESUMABLE_JOB"] = "nope"
    proc = cli(["launch", "--dry-run"], env)
    assert proc.returncode == 2 and "has no job named 'nope'" in proc.stderr


def test_no_profile_is_a_user_error(tmp_path: Path) -> None:
    proc = cli(["launch", "--dry-run"], clean_env(RESUMABLE_PROFILE=str(tmp_path / "none.yaml")))
    assert proc.returncode == 2
    assert "no profile here" in proc.stderr and "RESUMABLE_PROFILE" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_job_size_that_differs_from_the_plan_is_named(pod: Dict[str, str]) -> None:
    env = dict(pod, RANK="1", **dict(POD, WORLD_SIZE="16"))
    code, out, _ = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", env)
    assert code == 0
    assert "# warning: WORLD_SIZE=16 from the Ascend Operator, but the plan has 4 nodes x 8 processes" in out
    assert "LOCAL_WORLD_SIZE=8 from" not in out


def test_a_conflicting_value_in_the_environment_is_named(pod: Dict[str, str]) -> None:
    env = dict(pod, RANK="1", HCCL_ASYNC_ERROR_HANDLING="1", **POD)
    _, out, _ = dry_run(EXAMPLES / "pytorch-process-recovery.yaml", env)
    assert exports(out)["HCCL_ASYNC_ERROR_HANDLING"] == "0"
    assert "# warning: HCCL_ASYNC_ERROR_HANDLING=1 in the environment differs from the plan" in out


def test_build_spec_in_process(tmp_path: Path) -> None:
    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    spec = build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], str(tmp_path))
    assert spec.manager is None
    assert spec.command[1:] == [
        "--nproc_per_node=8",
        "--nnodes=2",
        "--node_rank=0",
        "--master_addr=a",
        "--master_port=1",
        "x.py",
    ]
    assert spec.timeline_path.startswith(str(tmp_path))
    assert spec.grace_seconds == pytest.approx(27.0)  # unset: Kubernetes' 30 s less 10 %


def test_a_missing_launcher_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    from resumable.runtime import installed

    monkeypatch.setattr(installed, "find_command", lambda name: None)
    job = job_plan(load_plan(str(EXAMPLES / "job-level-minimal.yaml")))
    spec = build_spec(job, {"RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, ["x.py"], "/tmp")
    assert any("torchrun is not installed next to" in p for p in spec.problems)


def test_expand() -> None:
    env = {"A": "1", "B_2": "x"}
    assert expand("$(A)/${B_2}/$A-", env) == "1/x/1-"
    with pytest.raises(MissingVariable) as info:
        expand("--node_rank=$RANK", env)
    assert info.value.name == "RANK"


# --- hostile pod environments and files (issue 25) --------------------------------------------------------

RANK0 = dict(POD, RANK="0")
PROCESS_RECOVERY = EXAMPLES / "pytorch-process-recovery.yaml"
#: what the injected text would run if a line of the printed script began with it
INJECTED = ("touch", "rm", "id")

HOSTILE_ENV = [
    ("rank-00", {"RANK": "00"}, ["RANK='00'", "plain decimal"]),
    ("rank-plus-0", {"RANK": "+0"}, ["RANK='+0'"]),
    ("rank-space", {"RANK": " 0"}, ["RANK=' 0'"]),
    ("rank-arabic-zero", {"RANK": "\u0660"}, ["RANK='\u0660'"]),
    ("rank-negative", {"RANK": "-1"}, ["RANK='-1'"]),
    ("rank-beyond-the-job", {"RANK": "4"}, ["RANK=4 is outside 0..3", "resumable render"]),
    ("rank-empty", {"RANK": ""}, ["RANK=''"]),
    ("world-size-text", {"WORLD_SIZE": "32x"}, ["WORLD_SIZE='32x'"]),
    ("local-world-size-zero", {"LOCAL_WORLD_SIZE": "0"}, ["LOCAL_WORLD_SIZE='0'"]),
    ("port-zero", {"MASTER_PORT": "0"}, ["MASTER_PORT='0'", "1 to 65535"]),
    ("port-too-large", {"MASTER_PORT": "65536"}, ["MASTER_PORT='65536'"]),
    ("port-name", {"MASTER_PORT": "http"}, ["MASTER_PORT='http'"]),
    ("address-newline", {"MASTER_ADDR": "10.96.0.10\ntouch /tmp/pwned"}, ["MASTER_ADDR='10.96.0.10\\ntouch"]),
    ("address-option", {"MASTER_ADDR": "10.96.0.10 --rdzv_backend=x"}, ["MASTER_ADDR="]),
    ("pod-ip-newline", {"POD_IP": "10.0.0.5\nrm -rf ~"}, ["POD_IP="]),
    ("task-id-dotdot", {"MINDX_TASK_ID": ".."}, ["MINDX_TASK_ID='..'", "one directory"]),
    ("task-id-path", {"MINDX_TASK_ID": "../../../etc"}, ["MINDX_TASK_ID='../../../etc'"]),
    ("task-id-newline", {"MINDX_TASK_ID": "uid\nid"}, ["MINDX_TASK_ID='uid\\nid'"]),
    ("pythonpath-newline", {"PYTHONPATH_EXTRA": "/x\nid"}, ["PYTHONPATH=", "control character"]),
    ("pythonpath-escape", {"PYTHONPATH_EXTRA": "\x1b[2J"}, ["PYTHONPATH=", "control character"]),
    ("address-not-utf8", {"MASTER_ADDR": "10.96.0.\udcff"}, ["MASTER_ADDR=", "not UTF-8"]),
]


def hostile(pod: Dict[str, str], changes: Dict[str, str]) -> Dict[str, str]:
    env = dict(pod, PYTHONIOENCODING="utf-8", **RANK0)
    extra = changes.get("PYTHONPATH_EXTRA")
    if extra is not None:
        env["PYTHONPATH"] += ":" + extra
    env.update((k, v) for k, v in changes.items() if k != "PYTHONPATH_EXTRA")
    return env


def assert_one_paragraph(proc: subprocess.CompletedProcess[str], fragments: List[str]) -> None:
    """Exit 2, one paragraph on stderr naming the input; the dry run's marked problem lines say the
    rest (the error names each input once, issue 24, without repeating their text)."""
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "internal error" not in proc.stderr, proc.stderr
    problems = "\n".join(line for line in proc.stdout.splitlines() if line.startswith("# problem:"))
    said = proc.stderr + problems if "--dry-run" in proc.args else proc.stderr
    for fragment in fragments:
        assert fragment in said, (fragment, proc.stderr)
        name = fragment.split("=", 1)[0]
        if "=" in fragment and name.isupper():
            assert name in proc.stderr, (name, proc.stderr)


@pytest.mark.parametrize("changes, fragments", [c[1:] for c in HOSTILE_ENV], ids=[c[0] for c in HOSTILE_ENV])
def test_a_hostile_pod_environment_is_refused_by_the_dry_run(
    pod: Dict[str, str], changes: Dict[str, str], fragments: List[str]
) -> None:
    """Each value the launcher uses is parsed into its type and bounds: a mistake is exit 2 naming the
    variable, and the printed script stays a script (a newline in a value never starts a line)."""
    proc = cli(["launch", "--profile", str(PROCESS_RECOVERY), "--dry-run"], hostile(pod, changes))
    assert_one_paragraph(proc, fragments)
    assert_dry_run_script(proc.stdout)
    problems = [line for line in proc.stdout.splitlines() if line.startswith("# problem: ")]
    assert any(fragments[0] in line for line in problems), problems


@pytest.mark.parametrize(
    "case_id", ["rank-00", "port-zero", "address-newline", "task-id-path", "pythonpath-newline", "address-not-utf8"]
)
def test_the_real_launch_refuses_what_the_dry_run_refuses(pod: Dict[str, str], tmp_path: Path, case_id: str) -> None:
    _, changes, fragments = next(c for c in HOSTILE_ENV if c[0] == case_id)
    logs = tmp_path / "logs"
    argv = ["launch", "--profile", str(PROCESS_RECOVERY), "--log-dir", str(logs), "--", "train.py"]
    proc = cli(argv, hostile(pod, changes))
    assert_one_paragraph(proc, ["cannot launch job llama-pretrain", *fragments])
    assert not logs.exists(), "a refused launch wrote its log directory"


def test_every_hostile_case_is_a_problem_of_build_spec(pod: Dict[str, str]) -> None:
    """The dry run and the real launch share one decision (build_spec's problems), so refusing in one
    is refusing in the other; here for every case, in process."""
    job = job_plan(load_plan(str(PROCESS_RECOVERY)))
    for case_id, changes, fragments in HOSTILE_ENV:
        spec = build_spec(job, hostile(pod, changes), ["train.py"], "/tmp/unused")
        assert any(fragments[0] in p for p in spec.problems), (case_id, spec.problems)


def test_a_task_id_never_moves_the_logs_out_of_the_log_root(pod: Dict[str, str], tmp_path: Path) -> None:
    """MINDX_TASK_ID becomes one directory of the plan's log path (<root>/$MINDX_TASK_ID/resumable): a
    value with ``..`` or ``/`` would put the timeline and TaskD's logs anywhere on the pod."""
    profile = write(
        tmp_path / "profile.yaml",
        profile_text(taskd=True).replace(
            "    script: train.py\n", "    script: train.py\n    checkpoint: {path: %s}\n" % (tmp_path / "ckpt")
        ),
    )
    outside = tmp_path / "outside"
    before = sorted(p.name for p in tmp_path.iterdir())
    for task_id in ("../../outside", "..", "a/../../../outside"):
        env = hostile(pod, {"MINDX_TASK_ID": task_id})
        proc = cli(["launch", "--profile", str(profile), "--", "train.py"], env)
        assert_one_paragraph(proc, ["MINDX_TASK_ID=%r" % task_id])
        assert sorted(p.name for p in tmp_path.iterdir()) == before, "the launch wrote somewhere"
        assert not outside.exists()


def test_a_long_tmpdir_is_refused_before_anything_starts(pod: Dict[str, str], tmp_path: Path) -> None:
    """The launcher's event socket lives in a fresh directory under TMPDIR; an AF_UNIX path has at most
    107 bytes (was: exit 3, "AF_UNIX path too long", after the log directory was made)."""
    tmpdir = tmp_path / ("t" * 100)
    tmpdir.mkdir()
    env = dict(pod, TMPDIR=str(tmpdir), **dict(POD, RANK="1"))
    profile = str(EXAMPLES / "job-level-minimal.yaml")
    logs = tmp_path / "logs"
    proc = cli(["launch", "--profile", profile, "--log-dir", str(logs), "--", "train.py"], env)
    assert_one_paragraph(proc, ["TMPDIR=", "107 bytes"])
    assert not logs.exists() and list(tmpdir.iterdir()) == []
    proc = cli(["launch", "--profile", profile, "--dry-run", "--", "train.py"], env)
    assert_one_paragraph(proc, ["TMPDIR="])


def test_files_the_launch_reads_are_read_bounded(pod: Dict[str, str], tmp_path: Path) -> None:
    """run.py and the launcher's ``#!`` line go through the bounded reader: a FIFO hung the dry run, a
    run.py that is not UTF-8 was exit 3, one that is a link to /dev/zero was read for ever (here under
    an address-space limit, where that ended in MemoryError, exit 3)."""
    run_py = Path(pod["PYTHONPATH"].split(":")[0]) / "torch" / "distributed" / "run.py"
    env = dict(pod, **RANK0)
    argv = ["launch", "--profile", str(PROCESS_RECOVERY), "--dry-run"]
    run_py.unlink()
    os.mkfifo(str(run_py))
    assert_one_paragraph(cli(argv, env, timeout=30), [str(run_py), "FIFO"])
    run_py.unlink()
    run_py.write_bytes(b"import os\n# caf\xe9\n")
    assert_one_paragraph(cli(argv, env, timeout=30), [str(run_py), "not UTF-8"])
    run_py.unlink()
    run_py.symlink_to("/dev/zero")
    assert_one_paragraph(cli(argv, env, timeout=60, memory=GIB), [str(run_py), "character device"])
    run_py.unlink()
    run_py.write_text(PATCHED)
    torchrun = Path(env["PATH"].split(":")[0]) / "torchrun"
    torchrun.unlink()
    os.mkfifo(str(torchrun))
    torchrun.chmod(0o755)
    assert_one_paragraph(cli(argv, env, timeout=30), [str(torchrun), "FIFO"])


def test_the_dry_run_checks_the_log_directory_the_launch_writes(pod: Dict[str, str], tmp_path: Path) -> None:
    """A log directory that is a file, or a timeline that is a FIFO (the launch blocked on it for
    ever), stops the real launch; the dry run says so too instead of calling the launch fine."""
    env = dict(pod, **dict(POD, RANK="1"))
    profile = str(EXAMPLES / "job-level-minimal.yaml")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("mine")
    for extra in (["--dry-run"], []):
        proc = cli(["launch", "--profile", profile, "--log-dir", str(not_a_dir), *extra, "--", "x.py"], env)
        assert_one_paragraph(proc, [str(not_a_dir), "not a directory"])
    assert not_a_dir.read_text() == "mine"
    logs = tmp_path / "logs"
    logs.mkdir()
    timeline = logs / ("timeline-%s.jsonl" % _host())
    os.mkfifo(str(timeline))
    for extra in (["--dry-run"], []):
        proc = cli(["launch", "--profile", profile, "--log-dir", str(logs), *extra, "--", "x.py"], env, timeout=30)
        assert_one_paragraph(proc, [str(timeline), "FIFO"])
    assert sorted(p.name for p in logs.iterdir()) == [timeline.name]


def test_script_arguments_are_checked_as_the_profiles_are(pod: Dict[str, str]) -> None:
    """A control character in jobs[].script_args is refused by the profile rules; after ``--`` too."""
    env = dict(pod, **dict(POD, RANK="1"))
    proc = cli(["launch", "--profile", str(PROCESS_RECOVERY), "--dry-run", "--", "train.py", "--x=\nid"], env)
    assert_one_paragraph(proc, ["--x=\\nid", "control character"])
    assert_dry_run_script(proc.stdout)


def test_profile_values_a_shell_reads_stay_words_of_the_printed_script(pod: Dict[str, str], tmp_path: Path) -> None:
    """Issue 35: jobs[].script_args and jobs[].env values a shell would read as commands are printed
    quoted; the dry run's script run by a real shell passes each on exactly as written and runs
    nothing it holds (the launcher replaced by a recorder of its arguments and environment)."""
    import yaml

    marks = tmp_path / "marks"
    marks.mkdir()
    args = ["$(touch %s/a)" % marks, "; touch %s/b" % marks, "`touch %s/c`" % marks, 'it\'s "q" \\ x', "--lr=1", ""]
    value = "$(touch %s/d); `touch %s/e` 'x' \"y\" \\ $HOME" % (marks, marks)
    doc = yaml.safe_load((EXAMPLES / "job-level-minimal.yaml").read_text(encoding="utf-8"))
    doc["jobs"][0].update(script="train+v2.py", script_args=args, env={"SHELL_READS": value})
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, out, err = dry_run(profile, dict(pod, RANK="0", **POD))
    assert code == 0, out + err
    assert_dry_run_script(out)
    launcher = Path(commands(out)[-1][0])
    executable(
        launcher, '#!/bin/sh\nprintf "%s\\0" "$@" > "$RECORD.argv"\nprintf "%s" "$SHELL_READS" > "$RECORD.env"\n'
    )
    record = tmp_path / "record"
    done = subprocess.run(["/bin/sh", "-c", out], env=dict(pod, RECORD=str(record)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(marks.iterdir()) == [], "the shell ran a command held in a value"
    argv = record.with_suffix(".argv").read_text(encoding="utf-8").split("\0")[:-1]
    assert argv[-len(args) - 1 :] == ["train+v2.py", *args]
    assert record.with_suffix(".env").read_text(encoding="utf-8") == value
