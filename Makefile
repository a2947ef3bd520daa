# The two commands a fresh machine needs (see README.md):
#   make run    build the gateway and serve the built-in sandbox server on 127.0.0.1:50005
#   make test   install what the tests need and run the whole suite (what CI runs)
# `make help` lists every target. A target's one-line description is the
# "## " comment after its name; the help target prints those lines.

GO ?= go
LISTEN ?= 127.0.0.1:50005
TOKEN_FILE ?= $(CURDIR)/.mcp-gateway/token
# CONFIG: an `mcp` object for `make run` (the built-in sandbox server when empty),
# e.g. make run CONFIG='{"memory": {}, "everything": {}}'.
CONFIG ?=

# The first target, build, is what a bare `make` runs.
.DEFAULT_GOAL := build

.PHONY: help run build check test test-deps lint conformance conformance-2026 soak bench bench-smoke fuzz catalog-smoke

# -buildvcs=auto: the binary carries its git revision (mcp-gateway version)
# even where GOFLAGS turns VCS stamping off; outside a git checkout, none.
# The plugin host (bin/mcp-gateway-plugin-host) runs go-plugin interceptors
# for the gateway, which looks for it next to its own executable: install
# both side by side.
build: ## compile bin/mcp-gateway and bin/mcp-gateway-plugin-host (the default target)
	@echo "compiling bin/mcp-gateway and bin/mcp-gateway-plugin-host (the first build downloads modules and compiles for a few minutes; later builds take seconds)"
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o bin/mcp-gateway ./cmd/mcp-gateway
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o bin/mcp-gateway-plugin-host ./cmd/mcp-gateway-plugin-host

run: build ## build, then serve on LISTEN (127.0.0.1:50005; token in .mcp-gateway/token; CONFIG='{...}' picks the servers)
	mkdir -p $(CURDIR)/.mcp-gateway
	./bin/mcp-gateway serve --listen $(LISTEN) --token-file $(TOKEN_FILE) \
		--servers-dir $(CURDIR)/.mcp-gateway/servers --catalog $(CURDIR)/.mcp-gateway/catalog.json \
		$(if $(CONFIG),--config '$(CONFIG)')

help: ## list the targets, one line each
	@echo "usage: make [target] (no target: $(.DEFAULT_GOAL))"
	@awk -F':.*## ' '/^[a-z][a-z0-9-]*:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The quick loop: everything compiles, vet is clean, and the tests pass
# without -race and without the end-to-end package (cmd/mcp-gateway: minutes,
# with the TypeScript harness), conformance, fuzzing, soak and benchmark.
# `make test` is what CI runs; run it before handing work in.
CHECK_PKGS = $$($(GO) list ./... | grep -v -e '/cmd/mcp-gateway$$' -e '/bench$$')
check: ## build, vet and the unit tests without -race or the slow end-to-end parts (about a minute)
	@echo "check: go build ./... and go vet ./..."
	$(GO) build ./...
	$(GO) vet ./...
	@echo "check: go test (no -race) of every package but cmd/mcp-gateway and bench"
	$(GO) test -count=1 $(CHECK_PKGS)

# The TypeScript SDK client and the npm server used by the end-to-end tests,
# and the Prometheus server that TestTelemetryPrometheus runs: installed with
# apt-get where that works without asking (root), else the script says why
# not and the test skips (test/prometheus-deps.sh).
test-deps: ## npm ci in test/ts (TypeScript SDK client, npm servers); the prometheus package where root can apt-get it
	cd test/ts && npm ci --no-audit --no-fund
	@bash test/prometheus-deps.sh

lint: ## gofmt -l and go vet
	@echo "lint: gofmt -l and go vet ./..."
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/ts/node_modules/*')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The official MCP conformance suite against the real gateway fronting a stdio
# fixture (test/conformance/run.sh: installs its own Node 22 with npm ci; about
# half a minute). Fails on a failing scenario not in expected-failures.txt.
conformance: ## the official MCP conformance suite against the gateway (about half a minute)
	GO="$(GO)" bash test/conformance/run.sh

# The 2026-07-28 run of the conformance suite (0.2.0-alpha.12, --requirements
# 2026-07-28): first against the fixture served directly by the Go SDK with
# Stateless, then through the gateway; both times every scored scenario must
# pass (the unscored ones, the tasks extension's and the header scenarios
# that send no token, are shown and not counted).
conformance-2026: ## the suite's 2026-07-28 run: the fixture directly, then through the gateway (seconds)
	GO="$(GO)" bash test/conformance/run.sh --era 2026 --direct
	GO="$(GO)" bash test/conformance/run.sh --era 2026

# The unit and end-to-end tests run last, so that go test's own summary closes
# the output (conformance prints a "N passed, M failed" line of its own).
# -timeout 30m: cmd/mcp-gateway takes about 6 minutes of go test's default
# 10 at load 45 on 2 cores (several engineers and CI at once); each test's own
# waits are bounded well within that.
test: test-deps lint ## the whole suite, what CI runs: lint, conformance (both eras), fuzz, soak, bench smoke, go test -race
	$(MAKE) --no-print-directory conformance
	$(MAKE) --no-print-directory conformance-2026
	$(MAKE) --no-print-directory fuzz
	$(MAKE) --no-print-directory soak
	$(MAKE) --no-print-directory bench-smoke
	@echo "test: go test -race ./... (the longest phase, several minutes; go test prints each package as it ends)"
	$(GO) test -race -count=1 -timeout 30m ./...

# Each fuzz target for FUZZTIME (test/fuzz.sh); seed corpora and regression
# inputs live in each package's testdata/fuzz. The endpoint's targets run a
# concurrent server whose coverage differs between runs of one input: with
# minimization on, the workers spend their time minimizing such "new"
# inputs instead of fuzzing (-fuzzminimizetime=0 turns it off).
FUZZTIME ?= 5s
FUZZ_TARGETS = internal/catalog:FuzzResolve internal/catalog:FuzzParseCatalog internal/catalog:FuzzSplitServers internal/catalog:FuzzNameRules \
	internal/naming:FuzzSanitize internal/rawjson:FuzzRawJSON internal/intercept:FuzzInterceptorInput \
	internal/endpoint:FuzzHTTPEndpoint:-fuzzminimizetime=0 internal/endpoint:FuzzLaneWire:-fuzzminimizetime=0
fuzz: ## each fuzz target for FUZZTIME (5s)
	@GO="$(GO)" FUZZTIME=$(FUZZTIME) bash test/fuzz.sh $(FUZZ_TARGETS)

# About 90 s: 32 sessions call three servers while one is killed every few
# seconds (cmd/mcp-gateway/soak_test.go; SOAK_DURATION=10s shortens it), then
# the storm: a server killed every 2 s for 20 s under 16 sessions with the
# default restart policy, reporting the failed calls during and after it
# (soakstorm_test.go; SOAK_STORM=10s shortens it).
soak: ## 60 s of 32 sessions while a server is killed every few seconds, then 20 s of a kill every 2 s
	@echo "soak: 32 sessions against three servers, one killed every few seconds; then the kill-every-2-s storm (about 90 s)"
	$(GO) test -race -tags soak -run Soak -count=1 -v ./cmd/mcp-gateway/

# The benchmark (bench/main.go): the real gateway over HTTP against
# stdio servers, one table with the targets; about three minutes. Flags go in
# BENCH_FLAGS, e.g. BENCH_FLAGS='-profile /tmp/prof'.
bench: ## the benchmark table (bench/; a few minutes; BENCH_FLAGS passes flags)
	$(GO) run ./bench $(BENCH_FLAGS)

# A few seconds of the same, so that the benchmark builds and works (it fails
# on a wrong answer or a leftover process, not on a missed target).
bench-smoke: ## a few seconds of the benchmark: it builds and answers right
	@echo "bench-smoke: go run ./bench -quick (build, then a few seconds of each measurement)"
	$(GO) run ./bench -quick

# Not part of `make test`: starts every npm entry of the catalog through the
# gateway, npx downloading each pinned version into a fresh cache, with dummy
# credentials, and prints a table (key, started, tools). Minutes, and hundreds
# of MB of downloads. CATALOG_SMOKE_ONLY=brave,notion narrows it.
catalog-smoke: ## start every npm catalog entry through the gateway (not in make test; minutes, downloads)
	$(GO) test -tags catalogsmoke -run '^TestCatalogSmokeAll$$' -count=1 -timeout 60m -v ./cmd/mcp-gateway/

# Mutation testing (docs/mutation.md): gremlins changes the code of one
# package a small step at a time (a flipped condition, an off-by-one, a
# wrong operator) and runs that package's tests on each change; a change no
# test fails on "lives". Slow (a test run per mutant), so not part of
# `make test`: PKG chooses the packages, e.g. make mutate PKG=internal/redact.
# Each mutant's tests may run MUTATE_TIMEOUT_COEF times as long as the
# package's tests did unmutated before it counts as timed out (a mutant that
# makes a wait endless); gremlins has no fixed timeout. go run fetches the
# pinned version through the module proxy on first use.
GREMLINS ?= github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
PKG ?= internal/redact internal/jsonlimit internal/auth internal/toolsearch internal/intercept internal/catalog
MUTATE_WORKERS ?= 1
MUTATE_TIMEOUT_COEF ?= 10
# GOFLAGS=-count=1: a cached test result would make gremlins' coverage run
# look instant, and every mutant then times out (counted as killed).
# -vet=off: go test vets the package before each run, two thirds of a
# mutant's CPU in internal/aggregate (24 s of 31); make test vets it once.
# -ldflags=-w: no DWARF in each mutant's test binary, half of its link.
# MUTATE_FLAGS: more gremlins flags, e.g. a file group of a big package:
# MUTATE_FLAGS="-E '(^|/)(tools|tasks)\.go$$'" leaves those files unmutated.
# MUTATE_FLAGS="--output-statuses kltcv" prints every mutant as it ends (by
# default only the lived and timed-out ones), so that a run stopped early
# still tells how many were killed.
MUTATE_FLAGS ?=
# MUTATE_BY_FILE=1: run gremlins a file at a time, each file's mutants
# against only the tests that run some of its code (go run ./test/mutate;
# docs/mutation.md). The verdicts are the same; the packages whose tests
# start real servers (supervisor, endpoint) cost a fraction of the time.
MUTATE_BY_FILE ?=
.PHONY: mutate
mutate: ## mutation testing with gremlins, PKG=... per package (slow; docs/mutation.md)
	@for p in $(PKG); do \
		echo "== mutation testing ./$$p (one test run of the package per mutant; minutes)"; \
		if [ -n "$(MUTATE_BY_FILE)" ]; then \
			$(GO) run ./test/mutate -pkg $$p -workers $(MUTATE_WORKERS) -timeout-coefficient $(MUTATE_TIMEOUT_COEF) || exit 1; \
			continue; \
		fi; \
		GOFLAGS="-count=1 -vet=off -ldflags=-w" $(GO) run $(GREMLINS) unleash --workers $(MUTATE_WORKERS) --timeout-coefficient $(MUTATE_TIMEOUT_COEF) \
			--output-statuses lt $(MUTATE_FLAGS) ./$$p || exit 1; \
	done
