#!/usr/bin/env bash
# Make a Docker engine reachable for the Docker-driver tests (test/docker/) and the lab.
#
#   .ci/docker-setup.sh            # install docker.io if missing, start dockerd if none runs, wait for it
#
# What it does, in order (each step only when needed):
#   1. `docker info` already answers            -> done.
#   2. no `dockerd` binary                        -> apt-get install -y docker.io (apt-get update first if needed).
#   3. no engine running                          -> start `dockerd --storage-driver=vfs` in the background
#      (overlay storage is not available on these machines; vfs works at the cost of a full image copy per
#      container). Its log and pid go to $TESSERA_DOCKERD_DIR (default: $TMPDIR/tessera-dockerd).
#   4. wait (bounded) until `docker info` answers; otherwise print the tail of dockerd's log and exit 1.
# Environment: TESSERA_DOCKER_WAIT_S (default 60) bounds the wait; TESSERA_DOCKER_STORAGE (default vfs).
# The engine is left running for the rest of the CI job; stop it with: kill "$(cat "$TESSERA_DOCKERD_DIR/dockerd.pid")"
set -euo pipefail

WAIT_S="${TESSERA_DOCKER_WAIT_S:-60}"
STORAGE="${TESSERA_DOCKER_STORAGE:-vfs}"
STATE_DIR="${TESSERA_DOCKERD_DIR:-${TMPDIR:-/tmp}/tessera-dockerd}"

say() { echo "docker-setup: $*"; }
die() { echo "docker-setup: FAILED: $*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else SUDO=""; fi
fi

engine_up() { docker info >/dev/null 2>&1 || $SUDO docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_up; then
  say "engine already reachable ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
  exit 0
fi

# 2. Install the engine when the daemon binary is missing (the client alone may be present).
if ! command -v dockerd >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "no dockerd and no apt-get to install docker.io; install a Docker engine by hand"
  say "installing docker.io (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y --no-install-recommends docker.io; then
    say "install failed; running apt-get update and retrying once"
    $SUDO apt-get update || die "apt-get update failed"
    $SUDO apt-get install -y --no-install-recommends docker.io || die "apt-get install docker.io failed"
  fi
  command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is still not on PATH"
fi
command -v docker >/dev/null 2>&1 || die "dockerd present but no docker client on PATH"

# 3. Start an engine when none runs. A stale socket without a daemon is left alone by dockerd itself.
mkdir -p "$STATE_DIR"
if ! pgrep -x dockerd >/dev/null 2>&1; then
  say "starting dockerd --storage-driver=$STORAGE (log: $STATE_DIR/dockerd.log)"
  # setsid + nohup: the daemon outlives this script and does not get the CI shell's signals.
  $SUDO setsid nohup dockerd --storage-driver="$STORAGE" >"$STATE_DIR/dockerd.log" 2>&1 < /dev/null &
  echo $! >"$STATE_DIR/dockerd.pid"
else
  say "a dockerd process already runs; waiting for it to answer"
fi

# 4. Wait, bounded.
for ((i = 0; i < WAIT_S; i++)); do
  if engine_up; then
    say "engine reachable after ${i}s ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'), storage $(docker info --format '{{.Driver}}' 2>/dev/null || echo '?'))"
    exit 0
  fi
  sleep 1
done
echo "---- last lines of $STATE_DIR/dockerd.log ----" >&2
tail -n 40 "$STATE_DIR/dockerd.log" >&2 || true
die "Docker engine not reachable after ${WAIT_S}s"
