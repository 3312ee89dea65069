# ascend-resumable: `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXAMPLE ?= examples/pytorch-process-recovery.yaml
DEMO_OUT ?= out/demo
# `make demo` has a virtualenv of its own with only what the demo runs: this checkout (editable)
# and the checker of the rendered YAML (requirements-demo.txt). No torch, Ansible, molecule or Pulumi.
DEMO_VENV ?= .venv-demo
DEMO_BIN := $(DEMO_VENV)/bin

.PHONY: check check-pytest demo demo-venv test venv test-venv pulumi-venv tools lint typecheck pytest py38 ansible runtime-image bench-recovery docs clean sandbox sandbox-down sandbox-drill

# The package alone (PyYAML is its only runtime dependency).
$(BIN)/resumable: pyproject.toml
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e .
	@touch $@

venv: $(BIN)/resumable

# What the Pulumi program needs, installed the way Pulumi's pip toolchain does it (Pulumi.yaml:
# toolchain pip, virtualenv .venv): `pip install -r requirements.txt` into .venv.
$(VENV)/.pulumi-deps: requirements.txt $(BIN)/resumable
	$(BIN)/python -m pip install -q -r requirements.txt
	@touch $@

pulumi-venv: $(VENV)/.pulumi-deps

# Everything the tests need; re-installed only when the requirements files change.
$(VENV)/.test-deps: requirements-test.txt requirements-demo.txt requirements.txt $(BIN)/resumable
	@echo "==> $(VENV): the test toolchain (requirements-test.txt: Pulumi, torch, Ansible, molecule, linters); minutes on a fresh machine"
	$(BIN)/python -m pip install -q -r requirements-test.txt
	@touch $@ $(VENV)/.pulumi-deps

test-venv: $(VENV)/.test-deps

$(DEMO_VENV)/.demo-deps: pyproject.toml requirements-demo.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "make demo: $(PYTHON) is Python " + sys.version.split()[0] + "; the YAML checker (jsonschema, kubernetes-validate) needs 3.10 or later: make demo PYTHON=python3.11")'
	@echo "==> $(DEMO_VENV): a virtualenv for the demo ($$($(PYTHON) --version))"
	@[ -x $(DEMO_BIN)/python ] || $(PYTHON) -m venv $(DEMO_VENV)
	@echo "==> installing ascend-resumable from this checkout and the YAML checker (requirements-demo.txt)"
	$(DEMO_BIN)/python -m pip install --disable-pip-version-check --no-compile -e . -r requirements-demo.txt
	@touch $@

demo-venv: $(DEMO_VENV)/.demo-deps

demo: $(DEMO_VENV)/.demo-deps
	@echo "==> validate every example profile"
	$(DEMO_BIN)/resumable validate examples/*.yaml
	@echo "==> the plan and recovery-time budget of $(EXAMPLE)"
	$(DEMO_BIN)/resumable plan $(EXAMPLE)
	@echo "==> render its whole deployment into $(DEMO_OUT)/"
	$(DEMO_BIN)/resumable render $(EXAMPLE) --out $(DEMO_OUT)
	@echo "==> check the rendered YAML: kubernetes-validate --strict, the AscendJob against the CRD the render wrote"
	$(DEMO_BIN)/python tests/manifests/check_rendered.py $(DEMO_OUT)
	@echo "rendered deployment: $(DEMO_OUT)/"

# The real Pulumi CLI, its Kubernetes provider, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd and KWOK, built from Go modules (tools/go/*: go.mod and go.sum pin
# every module) into a cache outside the checkout keyed by what decides each build; reused when
# present. A cold build takes about half an hour on 2 cores (docs/local-cluster.md); a warm one seconds.
tools:
	$(PYTHON) tools/go_tools.py build

PY_SOURCES := $(wildcard resumable resumable_pulumi tests benchmarks scripts tools __main__.py ansible_collections molecule)

lint: test-venv
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/resumable docs --check

typecheck: test-venv
	$(BIN)/mypy

# What `make check` leaves out: the tests that need the Go tools, a container engine or torchrun.
pytest: test-venv tools
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not ($(CHECK_MARKERS))" --durations=40

# The core of resumable must keep working on the oldest Python of the training images.
py38:
	scripts/test-py38.sh

ansible: test-venv
	scripts/test-ansible.sh

# The training image recipe (images/runtime/Dockerfile) built with podman on a local base image
# (installs podman as root when missing; builds the base once and reuses it).
runtime-image: test-venv
	scripts/test-runtime-image.sh

# Recovery time on the CPU with real torchrun: figures against the targets, not a test.
bench-recovery: test-venv
	$(BIN)/python benchmarks/recovery_cpu.py

# The everyday loop: lint, types and every test that needs nothing beyond the test virtualenv (no Go
# tools, no container engine or molecule, no torchrun end-to-end, no ansible-playbook run; the markers
# in tests/conftest.py).
# Minutes, not the hour of `make test`, which stays the gate CI runs.
# `make test` runs it first, then the rest.
CHECK_MARKERS := not cluster and not container and not torch and not playbook and not slow
check: lint typecheck check-pytest

check-pytest: test-venv
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "$(CHECK_MARKERS)" --durations=10

# The checks first, then pytest beside the rest on the two cores (a second job slot runs py38,
# every molecule scenario and the image build one after another): much of pytest waits on the
# control plane, the Pulumi engine and torchrun, and molecule on containers. Lines are kept whole
# (-Oline); a failure of either side fails the target after both have finished.
test: check
	$(MAKE) --no-print-directory -j2 -Oline --keep-going pytest py38 ansible runtime-image

# A local Kubernetes control plane (the real programs, KWOK fake nodes labelled from the profile's
# plan) to run `pulumi up` against before a real cluster: prints the environment and the commands.
SANDBOX ?= .sandbox
SANDBOX_PROFILE ?= examples/pytorch-process-recovery.yaml
sandbox: pulumi-venv tools
	$(BIN)/python tools/sandbox.py up --dir $(SANDBOX) --profile $(SANDBOX_PROFILE) $(if $(SANDBOX_NODES),--compute-nodes $(SANDBOX_NODES))

sandbox-down:
	$(PYTHON) tools/sandbox.py down --dir $(SANDBOX)

# pod-level rescheduling drilled on the sandbox (a 7.3.0 profile whose one job has Pod-level rescheduling;
# FAULT=node makes the pod's node NotReady instead): docs/local-cluster.md
FAULT ?= pod
sandbox-drill:
	$(BIN)/python tools/sandbox.py drill --dir $(SANDBOX) --profile $(SANDBOX_PROFILE) --fault $(FAULT)

clean:
	rm -rf $(VENV) $(DEMO_VENV) out collections .pytest_cache .mypy_cache .ruff_cache
