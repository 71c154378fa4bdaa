#!/usr/bin/env bash
# `make test-docker`: the docker backend against a real engine. Installs what is missing, starts an
# engine when none answers (and stops only that one), builds the image once (cached by the package
# index it is built from), then runs tests/docker. No engine at all is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=.venv/bin
HOME_DIR=${AGENTREL_HOME:-$PWD/.agentrel}
mkdir -p "$HOME_DIR"
LOG=$HOME_DIR/dockerd.log

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-docker: installing ${need[*]} from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }; then
    echo "test-docker: FAILED: cannot install ${need[*]} with apt-get, so no Docker engine can be started here" >&2
    exit 1
  fi
fi
$BIN/python -c 'import docker' 2>/dev/null || $BIN/python -m pip install -q 'docker>=7.0'

engine_answers() { $BIN/python -c 'import docker; docker.from_env(timeout=5).ping()' >/dev/null 2>&1; }

started=""
stop_engine() {
  if [ -n "$started" ] && kill -0 "$started" 2>/dev/null; then
    kill "$started" && for _ in $(seq 50); do kill -0 "$started" 2>/dev/null || break; sleep 0.2; done
  fi
}
trap stop_engine EXIT

if ! engine_answers; then
  # No bridge and no iptables: the sandbox container has no network, so the engine needs none either.
  dockerd --bridge=none --iptables=false --ip6tables=false >"$LOG" 2>&1 &
  started=$!
  for _ in $(seq 60); do engine_answers && break; kill -0 "$started" 2>/dev/null || break; sleep 0.5; done
  if ! engine_answers; then
    echo "test-docker: FAILED: no Docker engine could be started here ($(tail -n 1 "$LOG" 2>/dev/null || echo 'dockerd not found'); log $LOG)" >&2
    exit 1
  fi
fi

image=$($BIN/agentrel sandbox image build)
echo "test-docker: image $image"
AGENTREL_DOCKER_IMAGE=$image $BIN/python -m pytest -o addopts=-q -p no:cacheprovider tests/docker
