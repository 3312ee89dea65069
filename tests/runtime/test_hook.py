"""The start-up hook the launcher puts on the training processes' PYTHONPATH."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict

from resumable import constants as C
from resumable.runtime.launch import STARTUP_DIR

from .conftest import FIXTURES, clean_env, free_port, need_torch, python_path, read_jsonl, write


def python(code: str, env: Dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_hook_imports_nothing_early_and_runs_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    other = write(tmp_path / "other" / "sitecustomize.py", "import os\nos.environ['SHADOWED_RAN'] = 'yes'\n").parent
    env = clean_env(PYTHONPATH=python_path(Path(STARTUP_DIR), other), **{C.ENV_RESUMABLE_JIT_COMPILE: "0"})
    proc = python(
        "import os, sys; print(os.environ.get('SHADOWED_RAN'), 'torch_npu' in sys.modules, 'torch' in sys.modules,"
        " sys.modules['sitecustomize'].__file__)",
        env,
    )
    assert proc.returncode == 0, proc.stderr
    ran, npu, torch, hook = proc.stdout.split()
    assert (ran, npu, torch) == ("yes", "False", "False")
    assert Path(hook).parent == Path(STARTUP_DIR)


def test_a_broken_shadowed_sitecustomize_does_not_stop_the_process(tmp_path: Path) -> None:
    other = write(tmp_path / "other" / "sitecustomize.py", "raise RuntimeError('vendor hook broke')\n").parent
    proc = python("print('trained')", clean_env(PYTHONPATH=python_path(Path(STARTUP_DIR), other)))
    assert proc.returncode == 0 and proc.stdout.strip() == "trained"
    assert "the shadowed sitecustomize failed: RuntimeError: vendor hook broke" in proc.stderr


def test_compile_mode_is_set_right_after_torch_npu_is_imported(tmp_path: Path) -> None:
    need_torch()
    log = tmp_path / "calls.jsonl"
    fake_npu = FIXTURES / "torch_npu"
    for value, expected in (("0", False), ("1", True)):
        env = clean_env(
            PYTHONPATH=python_path(Path(STARTUP_DIR), fake_npu),
            RESUMABLE_FIXTURE_LOG=str(log),
            **{C.ENV_RESUMABLE_JIT_COMPILE: value},
        )
        proc = python("import torch_npu", env)
        assert proc.returncode == 0, proc.stderr
        assert read_jsonl(log)[-1]["jit_compile"] is expected
    env = clean_env(PYTHONPATH=python_path(Path(STARTUP_DIR), fake_npu), RESUMABLE_FIXTURE_LOG=str(log))
    before = len(read_jsonl(log))
    assert python("import torch_npu", env).returncode == 0
    assert len(read_jsonl(log)) == before, "no compile mode in the plan: nothing is called"


def test_each_restart_attempt_gets_its_own_store_keys() -> None:
    need_torch()
    port = free_port()
    code = (
        "import datetime\n"
        "from torch.distributed import TCPStore\n"
        "import sys, torch.distributed\n"
        "r = sys.modules['torch.distributed.rendezvous']\n"
        "server = TCPStore('127.0.0.1', %d, None, True, datetime.timedelta(seconds=30), wait_for_workers=False)\n"
        "store = r._create_c10d_store('127.0.0.1', %d, 1, 2, datetime.timedelta(seconds=30))\n"
        "store.set('rank_1', 'addr')\n"
        "print(server.check(['%s3/rank_1']), server.check(['rank_1']))\n" % (port, port, C.ATTEMPT_STORE_PREFIX)
    )
    env = clean_env(
        PYTHONPATH=STARTUP_DIR,
        TORCHELASTIC_USE_AGENT_STORE="True",
        TORCHELASTIC_RESTART_COUNT="3",
        **{C.ENV_RESUMABLE_ATTEMPT_STORE: "1"},
    )
    proc = python(code, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]
    env.pop(C.ENV_RESUMABLE_ATTEMPT_STORE)
    proc = python(code.replace(str(port), str(free_port())), env)
    assert proc.stdout.split() == ["False", "True"], "without the plan's switch torch's own store is used"


def test_mindspore_compile_mode_after_import_mindspore(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    env = clean_env(
        PYTHONPATH=python_path(Path(STARTUP_DIR), FIXTURES / "mindspore"),
        RESUMABLE_FIXTURE_LOG=str(log),
        **{C.ENV_RESUMABLE_JIT_COMPILE: "0", C.ENV_RESUMABLE_COMPILE_AFTER: "mindspore"},
    )
    proc = python("import sys; import mindspore; print('torch_npu' in sys.modules)", env)
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(log) and read_jsonl(log)[-1]["call"] == "op_compile" and read_jsonl(log)[-1]["value"] is False


def test_the_launcher_asks_for_the_plans_compile_call(tmp_path: Path) -> None:
    from conftest import EXAMPLES

    from resumable.api import job_plan, load_plan
    from resumable.runtime.launch import build_spec

    text = (EXAMPLES / "mindspore-process-recovery.yaml").read_text().replace("mode: default", "mode: binaries")
    for profile, after in (
        (write(tmp_path / "ms.yaml", text), "mindspore"),
        (EXAMPLES / "pytorch-process-recovery.yaml", "torch_npu"),
    ):
        job = job_plan(load_plan(str(profile)))
        spec = build_spec(job, {}, ["x.py"], str(tmp_path))
        exports = {e.name: e for e in spec.exports}
        assert exports[C.ENV_RESUMABLE_COMPILE_AFTER].value == after
        assert exports[C.ENV_RESUMABLE_JIT_COMPILE].value == ("1" if job.launcher.jit_compile else "0")
        assert job.launcher.compile_call and job.launcher.compile_call in exports[C.ENV_RESUMABLE_JIT_COMPILE].reason
