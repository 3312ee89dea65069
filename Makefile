# ascend-resumable: `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXAMPLE ?= examples/pytorch-process-recovery.yaml
DEMO_OUT ?= out/demo

.PHONY: demo test venv test-venv pulumi-venv lint typecheck pytest py38 ansible runtime-image bench-recovery docs clean

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
$(VENV)/.test-deps: requirements-test.txt requirements.txt $(BIN)/resumable
	$(BIN)/python -m pip install -q -r requirements-test.txt
	@touch $@ $(VENV)/.pulumi-deps

test-venv: $(VENV)/.test-deps

demo: test-venv
	$(BIN)/resumable validate examples/*.yaml
	$(BIN)/resumable plan $(EXAMPLE)
	$(BIN)/resumable render $(EXAMPLE) --out $(DEMO_OUT)
	$(BIN)/python tests/manifests/check_rendered.py $(DEMO_OUT)
	@echo "rendered deployment: $(DEMO_OUT)/"

PY_SOURCES := $(wildcard resumable resumable_pulumi tests benchmarks scripts __main__.py ansible_collections roles molecule)

lint: test-venv
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/resumable docs --check

typecheck: test-venv
	$(BIN)/mypy

pytest: test-venv
	$(BIN)/python -m pytest -q -p no:cacheprovider

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

test: lint typecheck pytest py38 ansible runtime-image

clean:
	rm -rf $(VENV) out collections .pytest_cache .mypy_cache .ruff_cache
