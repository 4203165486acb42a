# firedrill — `make help` lists the targets.
GO ?= go
BIN := bin/firedrill

.PHONY: help setup build test test-short fuzz bench demo vet clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: ## install missing Debian packages (postgresql, pgbench) and Go modules, build bin/firedrill
	./scripts/setup.sh

build: ## build bin/firedrill
	$(GO) build -o $(BIN) ./cmd/firedrill

test: ## run every test against real throwaway servers (race detector on)
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 30m ./...

test-short: ## run the tests without the race detector
	$(GO) test -count=1 ./...

fuzz: ## run each fuzzer for FUZZTIME (default 60s); new inputs land in testdata/fuzz
	@for f in FuzzParse FuzzParseExpr FuzzEvalExpr; do \
		$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$${FUZZTIME:-60s} ./script/ || exit 1; done

bench: build ## compare firedrill pgbench with the real pgbench on one embedded server (prints TPS ratios)
	$(GO) run ./bench/vs-pgbench

demo: build ## a real 30 s TPC-B-like run on a throwaway PostgreSQL, with progress and percentiles
	$(BIN) pgbench -c 8 -T 30 -P 5

vet: ## go vet and gofmt check
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

clean: ## remove build output
	rm -rf bin
