#!/bin/bash
# Ansible part of `make test`: lint, syntax checks and every molecule scenario.
# Does its own set-up on a fresh Debian 12 machine (run as root): podman/runc/debootstrap,
# the node image, the collections the podman driver needs. Uses the venv in .venv.
#   usage: scripts/test-ansible.sh [SCENARIO_ROLE|site...]   (default: all roles with molecule/, then site)
# The roles (each with its molecule scenario), playbooks and plugins are the collection
# ascend_resumable.npu under ansible_collections/.
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$repo"
venv=$repo/.venv/bin
export CONTAINERS_CONF=$repo/podman/containers.conf
# ./collections: third-party (fetched); the repository root: our ascend_resumable.npu collection
export ANSIBLE_COLLECTIONS_PATH=$repo/collections:$repo
collection=ansible_collections/ascend_resumable/npu
export ANSIBLE_CONFIG=$repo/ansible.cfg
export ANSIBLE_FORCE_COLOR=0 NO_COLOR=1 PY_COLORS=0
# molecule and ansible-lint look for ansible-playbook on PATH
export PATH=$venv:$PATH
image=localhost/ascend-node-deb12:latest

# shellcheck source=scripts/podman-env.sh
. "$repo/scripts/podman-env.sh"
ensure_podman test-ansible
podman image exists "$image" || step scripts/build-node-image.sh "$image"
[ -d collections/ansible_collections/containers/podman ] || step scripts/fetch-collections.sh "$repo/collections" "$venv/python"

# ansible-lint puts ~/.ansible/collections first on the collections path, where molecule's prerun
# installs this collection at each scenario: a copy from an earlier run (another revision) would shadow
# the tree being linted, so the lint runs with a HOME of its own
lint_home=$(mktemp -d)
step env HOME="$lint_home" "$venv/ansible-lint"
rm -rf "$lint_home"
for pb in site.yml "$collection"/playbooks/*.yml; do
  step "$venv/ansible-playbook" --syntax-check -i inventory/example/hosts.yml "$pb"
done

roles=("$@")
if [ ${#roles[@]} -eq 0 ]; then
  for d in "$collection"/roles/*/molecule; do roles+=("$(basename "$(dirname "$d")")"); done
  # the whole site.yml on a management node and two compute nodes (molecule/site)
  roles+=(site)
fi
failed=()
for role in "${roles[@]}"; do
  # ANSIBLE_CONFIG would override molecule's generated config
  if [ "$role" = site ]; then
    if ! (unset ANSIBLE_CONFIG && step "$venv/molecule" test -s site); then failed+=(site); fi
  elif ! (cd "$collection/roles/$role" && unset ANSIBLE_CONFIG && step "$venv/molecule" test --all); then
    failed+=("$role")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-ansible: molecule failed for: ${failed[*]}" >&2
  exit 1
fi
echo "test-ansible: lint, syntax checks and molecule (${roles[*]}) passed" >&2
