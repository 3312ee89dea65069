"""The command line (resumable.cli): exit codes, outputs and one-paragraph errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml
from conftest import EXAMPLE_FILES, EXAMPLES, ROOT

from resumable import cli
from resumable.rules import REGISTRY

EXAMPLE_IDS = [p.stem for p in EXAMPLE_FILES]

MINIMAL = 'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n'


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_paragraph(text: str) -> None:
    """A user-facing error: non-empty, no traceback, no blank line inside; one line per mistake
    (several schema problems of one profile come as a count and one ``  - `` line each)."""
    body = text.strip()
    assert body, "expected a message on stderr"
    assert "Traceback" not in text
    assert "\n\n" not in body
    lines = body.splitlines()
    if len(lines) > 1:
        assert re.search(r"\b%d problems? in the profile\b" % (len(lines) - 1), lines[0]), body
        assert all(line.startswith("  - ") for line in lines[1:]), body


def write(tmp_path: Path, text: str, name: str = "profile.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_examples_exist() -> None:
    assert len(EXAMPLE_FILES) >= 3


# --- validate ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_validate_passes_on_every_example(capsys: pytest.CaptureFixture[str], example: Path) -> None:
    code, out, err = run(capsys, "validate", str(example))
    assert code == 0, out + err
    assert out.startswith("OK %s: 0 errors" % example)
    assert err == ""


def test_validate_all_examples_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", *[str(p) for p in EXAMPLE_FILES])
    assert code == 0
    assert sum(1 for line in out.splitlines() if line.startswith("OK ")) == len(EXAMPLE_FILES)


def warned_profile(tmp_path: Path) -> str:
    """The Pod-level example with ``fault_scheduling: force`` on host networking: valid, one warning."""
    doc = yaml.safe_load((EXAMPLES / "pytorch-pod-rescheduling.yaml").read_text(encoding="utf-8"))
    doc["cluster"]["host_network"] = True
    doc["jobs"][0]["recovery"]["fault_scheduling"] = "force"
    return write(tmp_path, yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.parametrize("variant", ["example", "warned"])
def test_strict_fails_exactly_where_warnings_exist(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, variant: str
) -> None:
    from resumable.profile import load_profile
    from resumable.rules import WARNING, evaluate

    path = str(EXAMPLE_FILES[0]) if variant == "example" else warned_profile(tmp_path)
    warnings = [v for v in evaluate(load_profile(path)) if v.severity == WARNING]
    assert bool(warnings) == (variant == "warned")
    code, out, err = run(capsys, "validate", path)
    assert code == 0 and out.startswith("OK %s: 0 errors, %d warning" % (path, len(warnings)))
    code, out, err = run(capsys, "validate", "--strict", path)
    if warnings:
        assert code == 2
        assert out == ""
        assert err.startswith("INVALID %s: 0 errors, %d warning" % (path, len(warnings)))
        for w in warnings:
            assert "[%s]" % w.rule in err
    else:
        assert code == 0
        assert out.startswith("OK ")


def test_every_example_passes_strict(capsys: pytest.CaptureFixture[str]) -> None:
    for p in EXAMPLE_FILES:
        code, out, err = run(capsys, "validate", "--strict", str(p))
        assert code == 0, err
        assert out.startswith("OK %s" % p)


def test_validate_mixed_good_and_bad_reports_both(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = write(tmp_path, "clustr: {}\n")
    code, out, err = run(capsys, "validate", str(EXAMPLE_FILES[0]), bad)
    assert code == 2
    assert "OK %s" % EXAMPLE_FILES[0] in out
    assert bad in err
    assert_one_paragraph(err)


# --- plan ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_plan_json_and_yaml_agree(capsys: pytest.CaptureFixture[str], example: Path) -> None:
    code, out_json, err = run(capsys, "plan", "--format", "json", str(example))
    assert code == 0, err
    data = json.loads(out_json)
    assert data["profile"] == str(example)
    assert data["jobs"], "a plan has a job per profile job"
    assert {"scheduler", "nodes", "storage", "violations"} <= set(data)
    profile_doc = yaml.safe_load(example.read_text(encoding="utf-8"))
    assert len(data["jobs"]) == len(profile_doc["jobs"])
    assert all(v["severity"] != "error" for v in data["violations"])

    code, out_yaml, err = run(capsys, "plan", "--format", "yaml", str(example))
    assert code == 0, err
    assert yaml.safe_load(out_yaml) == data


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=EXAMPLE_IDS)
def test_plan_text(capsys: pytest.CaptureFixture[str], example: Path) -> None:
    code, out, err = run(capsys, "plan", str(example))
    assert code == 0, err
    assert str(example) in out.splitlines()[0]
    for job in yaml.safe_load(example.read_text(encoding="utf-8"))["jobs"]:
        assert job["name"] in out
    code2, out2, _ = run(capsys, "plan", "--format", "text", str(example))
    assert (code2, out2) == (code, out)


def test_plan_strict_refuses_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = yaml.safe_load(EXAMPLE_FILES[-1].read_text(encoding="utf-8"))
    doc["jobs"][0]["recovery"]["fault_scheduling"] = "force"  # process-level-grace warns
    path = write(tmp_path, yaml.safe_dump(doc))
    assert run(capsys, "plan", "--format", "json", path)[0] == 0
    code, out, err = run(capsys, "plan", "--strict", "--format", "json", path)
    assert code == 2
    assert out == ""
    assert "[process-level-grace]" in err and "strict" in err and "Traceback" not in err
    assert_one_paragraph(err)


# --- schema -------------------------------------------------------------------------------------------


def test_schema_is_valid_json_schema_and_accepts_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    code, out, err = run(capsys, "schema")
    assert code == 0 and err == ""
    schema = json.loads(out)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    for example in EXAMPLE_FILES:
        doc = yaml.safe_load(example.read_text(encoding="utf-8"))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        assert not errors, "%s: %s" % (example.name, [e.message for e in errors])
    # and it is strict: the same mistakes the loader rejects
    bad: Dict[str, Any]
    for bad in ({"clustr": {}}, {"cluster": {"mindcluster": "7.3.0"}}, {"cluster": {}, "jobs": [{"name": "a"}]}):
        assert not validator.is_valid(bad), bad


# --- bad inputs: exit 2, one paragraph, no traceback ----------------------------------------------------

BAD_PROFILES: List[Tuple[str, str, List[str]]] = [
    # (id, file content, fragments the message must contain)
    ("invalid-yaml", 'cluster:\n  mindcluster: "7.3.0"\n jobs: [\n', ["line 3 column", "not valid YAML"]),
    ("unclosed-flow", 'cluster: {mindcluster: "7.3.0"\n', ["line", "column", "YAML"]),
    ("top-level-list", "- cluster\n- jobs\n", ["expected a mapping", "list"]),
    ("top-level-scalar", "hello\n", ["expected a mapping"]),
    ("empty", "", ["empty"]),
    ("only-comments", "# nothing here\n", ["empty"]),
    (
        "string-for-int",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n    nodes: "two"\n',
        ["jobs[0].nodes", "integer", "'two'"],
    ),
    (
        "float-for-int",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n    npus_per_node: 8.5\n',
        ["jobs[0].npus_per_node", "integer"],
    ),
    (
        "number-for-version",
        "cluster:\n  mindcluster: 7.3\njobs:\n  - name: a\n",
        ["cluster.mindcluster", "number 7.3", "Quote"],
    ),
    (
        "bool-for-string-list",
        'cluster:\n  mindcluster: "7.3.0"\nscheduler:\n  image_pull_secrets: true\njobs:\n  - name: a\n',
        ["scheduler.image_pull_secrets", "list", "boolean true"],
    ),
    (
        "bool-in-strategy-list",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n    recovery:\n      strategies: [recover, true]\n',
        ["jobs[0].recovery.strategies[1]", "boolean"],
    ),
    (
        "string-for-bool",
        'cluster:\n  mindcluster: "7.3.0"\n  host_network: "yes please"\njobs:\n  - name: a\n',
        ["cluster.host_network", "boolean"],
    ),
    (
        "mapping-for-job-list",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  name: a\n',
        ["jobs", "list"],
    ),
    (
        "unknown-top-key",
        'clustr:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n',
        ["'clustr'", "Did you mean 'cluster'"],
    ),
    (
        "unknown-nested-key",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n    recovery:\n      monitor_intervall: 5\n',
        ["jobs[0].recovery", "'monitor_intervall'", "Did you mean 'monitor_interval'"],
    ),
    (
        "unknown-enum",
        'cluster:\n  mindcluster: "7.3.0"\n  arch: arm64\njobs:\n  - name: a\n',
        ["cluster.arch", "'arm64'", "aarch64", "x86_64"],
    ),
    (
        "enum-typo",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: a\n    recovery:\n      fault_scheduling: gracee\n',
        ["jobs[0].recovery.fault_scheduling", "Did you mean 'grace'"],
    ),
    (
        "bad-version-string",
        'cluster:\n  mindcluster: "seven"\njobs:\n  - name: a\n',
        ["cluster.mindcluster", "'seven'", "not a version"],
    ),
    ("missing-jobs", 'cluster:\n  mindcluster: "7.3.0"\n', ["'jobs'", "missing"]),
    ("empty-jobs", 'cluster:\n  mindcluster: "7.3.0"\njobs: []\n', ["jobs", "at least 1"]),
    ("missing-mindcluster", "cluster:\n  chip: ascend-910b\njobs:\n  - name: a\n", ["cluster", "'mindcluster'"]),
    ("missing-cluster", "jobs:\n  - name: a\n", ["'cluster'", "missing"]),
    ("null-cluster", "cluster:\njobs:\n  - name: a\n", ["cluster"]),
    (
        "bad-k8s-name",
        'cluster:\n  mindcluster: "7.3.0"\njobs:\n  - name: My_Job\n',
        ["jobs[0].name", "Kubernetes name"],
    ),
]


@pytest.mark.parametrize("content, fragments", [b[1:] for b in BAD_PROFILES], ids=[b[0] for b in BAD_PROFILES])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_bad_profile_exits_2_with_one_paragraph(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, content: str, fragments: List[str]
) -> None:
    path = write(tmp_path, content)
    code, out, err = run(capsys, command, path)
    assert code == 2, out + err
    assert_one_paragraph(err)
    assert path in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    if command == "plan":
        assert out == ""


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert_one_paragraph(err)
    assert path in err and "no such file" in err


def test_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "plan", str(tmp_path))
    assert code == 2
    assert_one_paragraph(err)
    assert str(tmp_path) in err and "directory" in err


def test_invalid_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"cluster:\n  name: caf\xe9\n")
    code, _, err = run(capsys, "validate", str(path))
    assert code == 2
    assert_one_paragraph(err)
    assert str(path) in err and "cannot be read" in err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files regardless of mode")
def test_unreadable_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = Path(write(tmp_path, MINIMAL))
    path.chmod(0)
    try:
        code, _, err = run(capsys, "validate", str(path))
    finally:
        path.chmod(0o600)
    assert code == 2
    assert_one_paragraph(err)
    assert "cannot be read" in err


def test_rule_error_exits_2_and_names_the_rule(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "  - name: a\n")  # two jobs with one name
    code, out, err = run(capsys, "validate", path)
    assert code == 2 and out == ""
    assert err.startswith("INVALID %s" % path)
    assert "ERROR [unique-job-names]" in err
    assert "unique-job-names" in REGISTRY
    code, out, err = run(capsys, "plan", "--format", "json", path)
    assert code == 2 and out == ""
    assert "[unique-job-names]" in err and "Traceback" not in err


def test_unicode_digit_version_is_invalid_not_internal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, 'cluster:\n  mindcluster: "²"\njobs:\n  - name: a\n')
    code, _, err = run(capsys, "validate", path)
    assert_one_paragraph(err)
    assert code == 2


def test_rule_errors_go_to_stderr_for_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "  - name: a\n")  # two jobs with one name
    for argv in (
        ["validate", path],
        ["validate", "--strict", path],
        ["plan", path],
        ["plan", "--format", "json", path],
        ["plan", "--format", "yaml", path],
        ["render", path, "--out", str(tmp_path / "stack")],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2, argv
        assert out == "", argv
        assert "[unique-job-names]" in err and "Traceback" not in err, argv
    assert not (tmp_path / "stack").exists()


def test_line_breaks_and_tabs_only_in_annotations(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Only pod annotation values may hold line breaks and tabs (the API server takes any annotation
    value); an env value may not, since ``resumable launch`` exports every variable as one line of its
    script (issue 35: validate said OK and the launch in the pod refused it). The refusal shows the
    value escaped, so it cannot add lines that look like the message's own."""
    doc = yaml.safe_load(EXAMPLE_FILES[0].read_text(encoding="utf-8"))
    doc["jobs"][0]["env"] = {"EXTRA_CONFIG": "a: 1\nfindings:\n\tnone"}
    path = write(tmp_path, yaml.safe_dump(doc))
    code, out, err = run(capsys, "validate", path)
    assert code == 2, err
    assert "jobs[0].env.EXTRA_CONFIG" in err and "'a: 1\\nfindings:\\n\\tnone'" in err, err
    assert not [x for x in err.splitlines() if x.startswith("findings")]
    doc["jobs"][0]["env"] = {}
    doc["jobs"][0]["pod"] = {"annotations": {"example.com/config": "a: 1\nfindings:\n\tnone"}}
    path = write(tmp_path, yaml.safe_dump(doc))
    code, out, _ = run(capsys, "plan", "--format", "json", path)
    assert code == 0
    assert json.loads(out)["jobs"][0]["replicas"][0]["annotations"]["example.com/config"] == "a: 1\nfindings:\n\tnone"


def test_plan_prints_the_launch_command_shell_quoted(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import shlex

    args = ["--data=/mnt/my data", "$(touch /tmp/pwned)", "it's", "--lr=0.1", "", "my train.py"]
    doc = yaml.safe_load(EXAMPLE_FILES[0].read_text(encoding="utf-8"))
    doc["jobs"][0]["script"] = "code/train+v2.py"
    doc["jobs"][0]["script_args"] = args
    path = write(tmp_path, yaml.safe_dump(doc))
    code, out, err = run(capsys, "plan", path)
    assert code == 0, err
    command = next(x for x in out.splitlines() if x.strip().startswith("launcher:")).split(":", 1)[1]
    words = shlex.split(command)
    assert words[-len(args) - 1 :] == ["code/train+v2.py", *args]
    assert "--lr=0.1" in command.split() and "'$(touch /tmp/pwned)'" in command
    assert any(w.endswith("=$RANK") or w.endswith("=$MS_NODE_RANK") for w in command.split())


def test_unquoted_on_for_watchdog_says_quote_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "    recovery: {watchdog: on}\n")
    code, _, err = run(capsys, "validate", path)
    assert code == 2
    assert_one_paragraph(err)
    assert "jobs[0].recovery.watchdog" in err and "boolean true" in err and 'quote it, e.g. "on"' in err


# --- internal errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, argv", [("cmd_validate", ["validate", "x.yaml"]), ("cmd_schema", ["schema"])])
def test_internal_error_exits_3_without_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str, argv: List[str]
) -> None:
    def boom(args: Any) -> int:
        raise RuntimeError("kaboom")

    monkeypatch.delenv("RESUMABLE_DEBUG", raising=False)
    monkeypatch.setattr(cli, name, boom)
    code, out, err = run(capsys, *argv)
    assert code == 3
    assert out == ""
    assert_one_paragraph(err)
    assert "RuntimeError" in err and "kaboom" in err and "RESUMABLE_DEBUG" in err


def test_internal_error_with_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args: Any) -> int:
        raise RuntimeError("kaboom")

    monkeypatch.setenv("RESUMABLE_DEBUG", "1")
    monkeypatch.setattr(cli, "cmd_schema", boom)
    with pytest.raises(RuntimeError, match="kaboom"):
        cli.main(["schema"])


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["frobnicate"], ["plan", "--format", "xml", str(EXAMPLE_FILES[0])]):
        with pytest.raises(SystemExit) as info:
            cli.main(argv)
        assert info.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


# --- docs -----------------------------------------------------------------------------------------------


def test_docs_are_up_to_date(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(str(ROOT / "docs"), str(docs))
    before = {p.name: p.read_text(encoding="utf-8") for p in docs.iterdir()}
    code, out, err = run(capsys, "docs", "--check", "--out", str(docs))
    assert code == 0, "docs/ is out of date: %s" % err
    assert out == "" and err == ""
    assert {p.name: p.read_text(encoding="utf-8") for p in docs.iterdir()} == before


def test_docs_check_detects_a_stale_file_and_regeneration_fixes_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(str(ROOT / "docs"), str(docs))
    (docs / "rules.md").write_text("stale\n", encoding="utf-8")
    code, _, err = run(capsys, "docs", "--check", "--out", str(docs))
    assert code == 2
    assert "rules.md" in err and "profile.md" not in err
    assert (docs / "rules.md").read_text(encoding="utf-8") == "stale\n"  # --check writes nothing
    code, out, _ = run(capsys, "docs", "--out", str(docs))
    assert code == 0 and "rules.md" in out
    assert (docs / "rules.md").read_text(encoding="utf-8") == (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert run(capsys, "docs", "--check", "--out", str(docs))[0] == 0


# --- as a subprocess ------------------------------------------------------------------------------------


def _subprocess(*argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("RESUMABLE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "resumable", *argv],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_python_dash_m_resumable(tmp_path: Path) -> None:
    ok = _subprocess("validate", *[str(p) for p in EXAMPLE_FILES])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("OK ") == len(EXAMPLE_FILES)

    bad = write(tmp_path, 'clustr:\n  mindcluster: "7.3.0"\n')
    res = _subprocess("validate", bad)
    assert res.returncode == 2
    assert_one_paragraph(res.stderr)
    assert "Did you mean 'cluster'" in res.stderr

    version = _subprocess("--version")
    assert version.returncode == 0 and version.stdout.startswith("resumable ")


@pytest.mark.parametrize("value", [9601, 9701])
def test_a_profile_setting_the_removed_taskd_port_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: int
) -> None:
    text = (EXAMPLES / "job-level-minimal.yaml").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^(  - name: .*)$", r"\1\n    taskd_port: %d" % value, text, count=1)
    code, _, err = run(capsys, "validate", write(tmp_path, text))
    assert code == 2
    assert_one_paragraph(err)
    assert "jobs[0].taskd_port" in err and "no longer a profile field" in err
    assert "Remove taskd_port" in err
