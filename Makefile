# The two commands a fresh machine needs (see README.md):
#   make run    build the gateway and serve the built-in sandbox server on 127.0.0.1:50005
#   make test   install what the tests need and run the whole suite (what CI runs)

GO ?= go
LISTEN ?= 127.0.0.1:50005
TOKEN_FILE ?= $(CURDIR)/.mcp-gateway/token

.PHONY: run build test test-deps lint

build:
	$(GO) build -trimpath -o bin/mcp-gateway ./cmd/mcp-gateway

run: build
	mkdir -p $(CURDIR)/.mcp-gateway
	./bin/mcp-gateway serve --listen $(LISTEN) --token-file $(TOKEN_FILE) \
		--servers-dir $(CURDIR)/.mcp-gateway/servers --catalog $(CURDIR)/.mcp-gateway/catalog.json

# The TypeScript SDK client and the npm server used by the end-to-end tests.
test-deps:
	cd test/ts && npm ci --no-audit --no-fund

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/ts/node_modules/*')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: test-deps lint
	$(GO) test -race -count=1 ./...
