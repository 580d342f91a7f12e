#!/usr/bin/env bash
# System packages the test suite needs beyond Python: the Debian `prometheus` package
# (`prometheus` + `promtool`) for the live-Prometheus DCGM test, and the Debian `chromium`
# package (/usr/bin/chromium) for the headless browser tests in tests/browser/ (Playwright drives
# it through `executable_path`; `playwright install` is never needed), and a Java 17 runtime
# (`openjdk-17-jre-headless`) for PySpark in `make test-spark`. Idempotent: installs only
# what is missing, and does nothing when both are already there. Runs apt-get as root, or
# through sudo when that is available.
set -euo pipefail
missing=()
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    missing+=(prometheus)
fi
if [ ! -x /usr/bin/chromium ]; then
    missing+=(chromium)
fi
if ! java -version 2>&1 | grep -q 'version "\(1[7-9]\|2[0-9]\)'; then
    missing+=(openjdk-17-jre-headless)
fi
if [ "${#missing[@]}" = "0" ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-system-deps: not root and no sudo; install the packages: ${missing[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
