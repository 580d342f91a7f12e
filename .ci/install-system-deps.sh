#!/usr/bin/env bash
# System packages the test suite needs beyond Python: the Debian `prometheus` package
# (`prometheus` + `promtool`) for the live-Prometheus DCGM test. Idempotent: does nothing when
# promtool is already on PATH. Runs apt-get as root, or through sudo when that is available.
set -euo pipefail
if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-system-deps: not root and no sudo; install the 'prometheus' package" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends prometheus
