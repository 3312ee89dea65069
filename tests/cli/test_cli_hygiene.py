"""CLI hygiene (issue 16): closed pipes, any output encoding, every user mistake a generated run
finds exits 2, linear rule time in list sizes, every schema problem in one run, validate --format
json, render --out - as one stream, an example in every sub-command's help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml
from conftest import EXAMPLES, ROOT

from resumable import cli
from resumable.plan import build_plan
from resumable.profile import parse_profile
from resumable.rules.base import Violation

EXAMPLE = EXAMPLES / "pytorch-process-recovery.yaml"


def resumable(*argv: str, env: Dict[str, str] = {}, cwd: Path = ROOT) -> subprocess.CompletedProcess:  # type: ignore[type-arg]  # noqa: B006
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.run(
        [sys.executable, "-m", "resumable", *argv], cwd=cwd, env=full, capture_output=True, timeout=120, check=False
    )


def many_jobs(tmp_path: Path, jobs: int) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["jobs"] = [dict(doc["jobs"][0], name="job-%02d" % i) for i in range(jobs)]
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", [["plan", "PROFILE", "--format", "json"], ["schema"], ["plan", "PROFILE"]])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, command: List[str]) -> None:
    """`resumable plan --format json | head -1` exited 3 "internal error: BrokenPipeError"."""
    profile = many_jobs(tmp_path, 30)  # far more than a pipe buffer holds
    argv = [str(profile) if a == "PROFILE" else a for a in command]
    proc = subprocess.Popen(
        [sys.executable, "-m", "resumable", *argv],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert code in (0, cli.EXIT_PIPE), err
    assert err == "", err


@pytest.mark.parametrize("fmt", ["json", "yaml", "text"])
def test_plan_prints_in_an_ascii_locale(fmt: str) -> None:
    """PYTHONIOENCODING=ascii exited 3 (UnicodeEncodeError on the Chinese citations)."""
    ascii_run = resumable("plan", str(EXAMPLE), "--format", fmt, env={"PYTHONIOENCODING": "ascii"})
    assert ascii_run.returncode == 0, ascii_run.stderr.decode()
    text = ascii_run.stdout.decode("ascii")  # encodable: nothing outside ASCII
    utf8 = resumable("plan", str(EXAMPLE), "--format", fmt, env={"PYTHONIOENCODING": "utf-8"}).stdout.decode()
    if fmt == "json":
        assert json.loads(text) == json.loads(utf8)
    elif fmt == "yaml":
        assert yaml.safe_load(text) == yaml.safe_load(utf8)
    else:
        assert "\\u" in text and any(ord(c) > 127 for c in utf8)


def test_schema_prints_in_an_ascii_locale() -> None:
    proc = resumable("schema", env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout.decode("ascii")) == json.loads(resumable("schema").stdout.decode())


def test_an_error_with_chinese_text_prints_in_an_ascii_locale(tmp_path: Path) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["jobs"][0]["name"] = "训练"
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    proc = resumable("validate", str(path), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 2
    assert "jobs[0].name" in proc.stderr.decode("ascii")


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_sp_block_zero_is_a_user_mistake(tmp_path: Path, command: str) -> None:
    """`jobs[0].sp_block: 0` exited 3 (ZeroDivisionError in rules/workload.py)."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["jobs"][0]["sp_block"] = 0
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    proc = resumable(command, str(path))
    assert proc.returncode == 2, proc.stderr.decode()
    assert "jobs[0].sp_block" in proc.stderr.decode()
    assert "internal error" not in proc.stderr.decode()


def test_rules_compare_no_violation_with_every_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 recovery.strategies items took 9.7 s: each unknown strategy was looked up in a list of
    the others and each violation compared with all the kept ones (quadratic). Counted, not timed:
    the plan compares no two violations and reports each distinct unknown name once."""
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["jobs"][0]["recovery"]["strategies"] = ["recover"] + ["typo-%d" % i for i in range(3000)] * 2
    profile = parse_profile(yaml.safe_dump(doc), "big")
    compared = []
    original = Violation.__eq__

    def counting(self: Violation, other: object) -> bool:
        compared.append(1)
        return original(self, other)

    monkeypatch.setattr(Violation, "__eq__", counting)
    plan = build_plan(profile, "big")
    unknown = [v for v in plan.violations if v.rule == "unknown-strategy"]
    assert len(unknown) == 3000
    assert len(compared) < 10, "violations compared %d times" % len(compared)


def test_every_schema_problem_in_one_run(tmp_path: Path) -> None:
    """Profile typos were reported one per run."""
    path = tmp_path / "p.yaml"
    path.write_text(
        "cluster:\n  mindcluster: '7.3.0'\n  chipp: ascend-910b\n  arch: arm\n"
        "jobs:\n  - name: a\n    nodes: two\n  - name: B_bad\n    unknown: 1\n",
        encoding="utf-8",
    )
    proc = resumable("validate", str(path))
    err = proc.stderr.decode()
    assert proc.returncode == 2
    for where in (
        "cluster: unknown key 'chipp'",
        "cluster.arch",
        "jobs[0].nodes",
        "jobs[1]: unknown key",
        "jobs[1].name",
    ):
        assert where in err, (where, err)
    assert "5 problems" in err
    assert "required key 'chip'" not in err  # a typo is reported once, as the typo


def test_validate_format_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    doc = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    doc["jobs"][0]["npus_per_node"] = 16
    bad.write_text(yaml.safe_dump(doc), encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text("cluster: {chipp: x}\n", encoding="utf-8")
    proc = resumable("validate", str(EXAMPLE), str(bad), str(broken), "--format", "json")
    assert proc.returncode == 2
    report: Dict[str, Any] = json.loads(proc.stdout)
    assert report["valid"] is False
    good, wrong, unbound = report["profiles"]
    assert good["valid"] and good["profile"] == str(EXAMPLE) and good["violations"] == []
    assert not wrong["valid"] and "npus-per-node-hardware" in {v["rule"] for v in wrong["violations"]}
    assert {"rule", "severity", "paths", "message", "fix", "source"} <= set(wrong["violations"][0])
    assert not unbound["valid"] and unbound["problems"]
    ok = resumable("validate", str(EXAMPLE), "--format", "json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True


def test_render_to_stdout_is_one_stream(tmp_path: Path) -> None:
    """`--out -` created a directory named `-`."""
    proc = resumable("render", str(EXAMPLE), "--out", "-", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr.decode()
    docs = list(yaml.safe_load_all(proc.stdout.decode()))
    assert len(docs) > 40 and all(d["apiVersion"] and d["kind"] for d in docs)
    assert os.listdir(tmp_path) == [], "nothing is written in the working directory"
    out = tmp_path / "out"
    assert resumable("render", str(EXAMPLE), "--out", str(out)).returncode == 0
    files = sorted(p for p in out.rglob("*.yaml"))
    assert [yaml.safe_load(p.read_text(encoding="utf-8")) for p in files] == docs


def _subcommands() -> List[List[str]]:
    p = cli.parser()
    sub = next(a for a in p._actions if a.dest == "command")
    out = []
    for name, cmd in sub.choices.items():  # type: ignore[union-attr]
        out.append([name])
        nested = [a for a in cmd._actions if getattr(a, "choices", None) and a.dest.endswith("_command")]
        for action in nested:
            out.extend([name, n] for n in action.choices)
    return out


@pytest.mark.parametrize("command", _subcommands(), ids=lambda c: " ".join(c))
def test_every_sub_command_help_has_an_example(command: List[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Sub-command help was thin: an example in each."""
    with pytest.raises(SystemExit) as info:
        cli.main([*command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    assert "example:" in text and "resumable %s" % command[0] in text.split("example:", 1)[1], text
