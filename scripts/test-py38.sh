#!/usr/bin/env bash
# Run the core tests on Python 3.8 (resumable ships inside training images that may still have 3.8).
#
# Finds a Python 3.8 interpreter ($PYTHON38, pyenv, ~/.pyenv, then python3.8 on PATH), creates .venv38
# only when it is missing (reused otherwise), installs the package and the test tools that still
# support 3.8, checks that installing resumable pulls in nothing but PyYAML, and runs the core tests
# with the hypothesis "dev" profile.
#
# Environment:
#   PYTHON38=/path/to/python3.8   use this interpreter
#   RESUMABLE_SKIP_PY38=1         exit 0 with a notice when no Python 3.8 is found (instead of failing)
#   VENV38=DIR                    virtualenv location (default: <repo>/.venv38)
# Extra arguments are appended to the pytest command line (options such as -x or -k versions).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV38:-$ROOT/.venv38}"
cd "$ROOT"

say() { printf '[test-py38] %s\n' "$*" >&2; }
is_py38() { [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 8))' 2>/dev/null; }

find_python38() {
    local candidates=() root c
    if [ -n "${PYTHON38:-}" ]; then candidates+=("$PYTHON38"); fi
    if command -v pyenv >/dev/null 2>&1; then
        root="$(pyenv root 2>/dev/null || true)"
        if [ -n "$root" ]; then
            for c in "$root"/versions/3.8*/bin/python3.8; do candidates+=("$c"); done
        fi
    fi
    if [ -n "${PYENV_ROOT:-}" ]; then
        for c in "$PYENV_ROOT"/versions/3.8*/bin/python3.8; do candidates+=("$c"); done
    fi
    for c in "$HOME"/.pyenv/versions/3.8*/bin/python3.8; do candidates+=("$c"); done
    if command -v python3.8 >/dev/null 2>&1; then candidates+=("$(command -v python3.8)"); fi
    for c in "${candidates[@]}"; do
        # a pyenv shim may exist without a 3.8 behind it: ask the interpreter itself
        if is_py38 "$c"; then
            printf '%s\n' "$c"
            return 0
        fi
    done
    return 1
}

if ! PY38="$(find_python38)"; then
    if [ "${RESUMABLE_SKIP_PY38:-}" = "1" ]; then
        say "no Python 3.8 found; skipping because RESUMABLE_SKIP_PY38=1"
        exit 0
    fi
    say "error: no Python 3.8 interpreter found (looked at \$PYTHON38, \$(pyenv root)/versions/3.8*," \
        "\$PYENV_ROOT/versions/3.8*, ~/.pyenv/versions/3.8*, python3.8 on PATH)."
    say "Install one (e.g. 'pyenv install 3.8'), point PYTHON38 at it, or set RESUMABLE_SKIP_PY38=1 to skip."
    exit 1
fi
say "using $PY38 ($("$PY38" -c 'import sys; print(sys.version.split()[0])'))"

if [ -x "$VENV/bin/python" ] && is_py38 "$VENV/bin/python"; then
    say "reusing $VENV"
else
    if [ -e "$VENV" ]; then
        say "error: $VENV exists but is not a Python 3.8 virtualenv; remove it and rerun"
        exit 1
    fi
    say "creating $VENV"
    "$PY38" -m venv "$VENV"
fi
PY="$VENV/bin/python"

# resumable's runtime dependencies must stay PyYAML only (it ships inside training images).
say "checking that 'pip install .' needs nothing but PyYAML"
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
"$PY" -m pip install --quiet --dry-run --ignore-installed --report "$report" "$ROOT"
"$PY" - "$report" <<'EOF'
import json, re, sys
with open(sys.argv[1]) as handle:
    installs = json.load(handle)["install"]
names = sorted(re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower() for item in installs)
extra = [n for n in names if n not in ("ascend-resumable", "pyyaml")]
print("[test-py38] 'pip install .' would install: %s" % ", ".join(names), file=sys.stderr)
if extra:
    sys.exit("[test-py38] error: runtime dependencies beyond PyYAML: %s" % ", ".join(extra))
EOF

say "installing resumable (editable) and the test tools"
"$PY" -m pip install --quiet -e "$ROOT" "pytest<8.4"
# Optional tools: tests that need them import them with pytest.importorskip.
for req in "hypothesis<6.114" "jsonschema<4.24"; do
    if ! "$PY" -m pip install --quiet "$req"; then
        say "warning: could not install '$req' for Python 3.8; the tests that need it will be skipped"
    fi
done

tests=()
# The runtime ships in training images: the launcher, doctor, timeline, run.py patcher and image
# context run here too. Tests that need torch skip with a message (this venv has none); the fixture
# wheels need a C compiler for libtaskd.so.
for t in tests/versions/test_versions.py tests/plan/test_rules.py tests/plan/test_plan.py tests/cli/test_cli.py tests/plan/test_property.py \
    tests/plan/test_adversarial.py tests/plan/test_formats.py tests/plan/test_yamlio.py tests/plan/test_hardware.py tests/cli/test_cli_hygiene.py \
    tests/plan/test_operatorenv.py \
    tests/runtime/test_launch_spec.py tests/runtime/test_supervisor.py tests/runtime/test_timeline.py \
    tests/runtime/test_doctor.py tests/runtime/test_context.py tests/runtime/test_torchrun_patch.py \
    tests/runtime/test_hook.py tests/runtime/test_e2e_torchrun.py tests/runtime/test_hostile_inputs.py; do
    if [ -e "$t" ]; then
        tests+=("$t")
    else
        say "note: $t does not exist (yet); not run"
    fi
done
if [ "${#tests[@]}" -eq 0 ]; then
    say "error: none of the core test files exist"
    exit 1
fi

say "running pytest on Python 3.8: ${tests[*]}"
export HYPOTHESIS_PROFILE=dev  # overrides CI=1 in tests/plan/test_property.py
exec "$PY" -m pytest -p no:cacheprovider "${tests[@]}" "$@"
