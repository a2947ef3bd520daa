#!/usr/bin/env bash
# Runs each fuzz target (pkg:FuzzName) for $FUZZTIME; go test fuzzes one
# target per run. A failing input is written to the package's
# testdata/fuzz: fix the bug and keep it as a seed.
#
# The Go fuzzer sometimes ends a run with "context deadline exceeded" when
# -fuzztime runs out while a worker is busy with a new input, and no
# failing input: a toolchain flake, not a finding. Such a run is repeated
# once; any other failure, or the flake twice, fails.
set -u
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
#
# A target may carry go test flags of its own after a second colon
# (pkg:FuzzName:-flag=value,-other=value).
for t in "$@"; do
	pkg=${t%%:*} rest=${t#*:}
	name=${rest%%:*} flags=()
	if [ "$rest" != "$name" ]; then
		IFS=, read -r -a flags <<<"${rest#*:}"
	fi
	# Without minimization every run adds to the fuzz cache the inputs whose
	# coverage only varied with scheduling, and replaying them soon takes the
	# whole run: such a target starts from its seeds and testdata alone.
	if [[ " ${flags[*]-} " == *" -fuzzminimizetime=0 "* ]]; then
		rm -rf "$("$GO" env GOCACHE)/fuzz/$("$GO" list "./$pkg")/$name"
	fi
	run() {
		echo "fuzz $name for $FUZZTIME ${flags[*]}"
		"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" ${flags[@]+"${flags[@]}"} "./$pkg" >"$out" 2>&1
		local status=$?
		cat "$out"
		return $status
	}
	if run; then
		continue
	fi
	if grep -q "context deadline exceeded" "$out" && ! grep -q "Failing input written" "$out"; then
		echo "fuzz: $name ended on the fuzzer's deadline flake (no failing input); running it again"
		run && continue
	fi
	exit 1
done
