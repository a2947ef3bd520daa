#!/usr/bin/env bash
# Installs the Prometheus server (the Debian package `prometheus`) for
# TestTelemetryPrometheus, which has a real Prometheus scrape the gateway.
# It installs only where it can do so without asking: as root, with
# apt-get, non-interactively. Anywhere else it says why it did not, and
# the test skips with that reason (in CI it fails instead wherever this
# script could have installed it: see docs/observability.md). It never
# fails `make test` itself: the test is what reports.
#
# On a host running systemd the package enables a prometheus service of
# its own (port 9090); the test starts its own server on free ports and
# does not use it.
set -u
if command -v prometheus >/dev/null 2>&1; then
	echo "test-deps: prometheus found ($(prometheus --version 2>&1 | head -n 1))"
	exit 0
fi
if [ "$EUID" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: prometheus is not installed and cannot be here (needs root and apt-get):" \
		"TestTelemetryPrometheus will skip; install the Debian package prometheus to run it"
	exit 0
fi
echo "test-deps: installing the Debian package prometheus (apt-get, for TestTelemetryPrometheus)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >"$log" 2>&1
}
# A fresh image has no package lists: update once if the first try fails.
if ! install && ! { apt-get update -qq >>"$log" 2>&1 && install; }; then
	echo "test-deps: could not install prometheus (apt-get failed; its last lines follow):" \
		"TestTelemetryPrometheus will fail in CI, skip elsewhere"
	tail -n 5 "$log" | sed 's/^/  /'
	exit 0
fi
echo "test-deps: prometheus installed ($(prometheus --version 2>&1 | head -n 1))"
