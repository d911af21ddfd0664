#!/bin/sh
# Installs etcd (Debian package etcd-server) for `npm run bench -- --vs etcd` when it is missing and apt
# is available; otherwise says that the etcd comparison will be skipped. Needs root (or sudo).
set -eu
if command -v etcd >/dev/null 2>&1; then
  echo "etcd present: $(etcd --version | head -n 1)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "etcd missing and apt-get not available: the etcd comparison will be skipped"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "etcd missing and not root (no sudo): the etcd comparison will be skipped"
    exit 0
  fi
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server
# The package may start a system etcd on 127.0.0.1:2379; the benchmark runs its own members and
# does not need it.
if command -v systemctl >/dev/null 2>&1; then $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true; fi
echo "etcd installed: $(etcd --version | head -n 1)"
