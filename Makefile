# firedrill — `make help` lists the targets.
GO ?= go
BIN := bin/firedrill
# GOTESTFLAGS adds flags to the go test of test and test-drills (.ci/run
# passes -json, to check that no package or drill was skipped).
GOTESTFLAGS ?=

.PHONY: help setup build test test-memory test-drills test-short fuzz bench demo vet clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

setup: ## install missing Debian packages (PostgreSQL, pgbench, MariaDB, Redis, sysbench, wrk, chromium) and Go modules, build bin/firedrill
	./scripts/setup.sh

build: ## build bin/firedrill
	$(GO) build -o $(BIN) ./cmd/firedrill

# The packages whose tests take longest, named first: go test starts
# packages in the order it is given them, as many at a time as there are
# cores (two in CI), so these start at once and the short ones fill in
# beside them, instead of the longest starting last and running alone at
# the end (./... adds the rest; a package named twice runs once).
SLOWTESTS := ./internal/cli/ ./runner/ ./report/ ./db/postgres/client/ ./kinds/ ./service/

test: ## run every test against real throwaway servers (race detector on), then the memory bounds without it
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 45m $(GOTESTFLAGS) $(SLOWTESTS) ./...
	$(MAKE) test-memory

test-memory: ## peak memory of a 100,000-command script in run and pgbench -r, and a service's allocations per request (without the race detector, which multiplies memory)
	$(GO) test -count=1 -run '^TestLongScriptMemoryIsBounded$$' -v ./internal/cli/
	$(GO) test -count=1 -run '^TestServeOnLoopsAllocatesNothing$$' ./service/

test-drills: ## run every drill's quick version and check its expected findings (about 15 minutes, MariaDB's openchat and stock-mariadb included)
	FIREDRILL_DRILL_TESTS=1 $(GO) test -p 1 -count=1 -timeout 30m -run '^(TestDrillQuick|TestMultixactShapeOnTheTimeline)$$' -v $(GOTESTFLAGS) ./internal/cli/ ./runner/

test-short: ## run the tests without the race detector
	$(GO) test -count=1 ./...

test-report-browser: ## open report.html and compare.html of recorded runs in headless Chromium; pages and screenshots kept in report/testdata/artifacts/<test>/<run>/
	$(GO) test -count=1 -run 'InBrowser' -v ./report/ -keep

fuzz: ## run each fuzzer for FUZZTIME (default 60s); new inputs land in testdata/fuzz
	@for f in FuzzParse FuzzParseExpr FuzzEvalExpr; do \
		$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$${FUZZTIME:-60s} ./script/ || exit 1; done
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$${FUZZTIME:-60s} ./scenario/
	$(GO) test -run='^$$' -fuzz='^FuzzRead$$' -fuzztime=$${FUZZTIME:-60s} ./scripts/testcheck/
	$(GO) test -run='^$$' -fuzz='^FuzzBackendMessages$$' -fuzztime=$${FUZZTIME:-60s} ./db/postgres/client/
	$(GO) test -run='^$$' -fuzz='^FuzzConfinementEscapes$$' -fuzztime=$${FUZZTIME:-60s} ./db/postgres/client/
	$(GO) test -run='^$$' -fuzz='^FuzzRedact$$' -fuzztime=$${FUZZTIME:-60s} ./internal/secret/
	$(GO) test -run='^$$' -fuzz='^FuzzParseRedis$$' -fuzztime=$${FUZZTIME:-60s} ./script/
	$(GO) test -run='^$$' -fuzz='^FuzzReply$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/client/
	$(GO) test -run='^$$' -fuzz='^FuzzReadReply$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/redisconn/
	$(GO) test -run='^$$' -fuzz='^FuzzParseURL$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/redisconn/
	$(GO) test -run='^$$' -fuzz='^FuzzParseClientList$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/redisevent/
	$(GO) test -run='^$$' -fuzz='^FuzzParseMySQL$$' -fuzztime=$${FUZZTIME:-60s} ./script/
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeResponse$$' -fuzztime=$${FUZZTIME:-60s} ./db/mariadb/client/
	$(GO) test -run='^$$' -fuzz='^FuzzInfo$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/sampler/
	$(GO) test -run='^$$' -fuzz='^FuzzReplies$$' -fuzztime=$${FUZZTIME:-60s} ./db/redis/sampler/
	$(GO) test -run='^$$' -fuzz='^FuzzSplitStatements$$' -fuzztime=$${FUZZTIME:-60s} ./db/mariadb/
	$(GO) test -run='^$$' -fuzz='^FuzzEscapes$$' -fuzztime=$${FUZZTIME:-60s} ./db/mariadb/
	$(GO) test -run='^$$' -fuzz='^FuzzParseInnoDBStatus$$' -fuzztime=$${FUZZTIME:-60s} ./db/mariadb/sampler/
	$(GO) test -run='^$$' -fuzz='^FuzzParsePLpgSQL$$' -fuzztime=$${FUZZTIME:-60s} ./sqlcheck/
	$(GO) test -run='^$$' -fuzz='^FuzzParseSLO$$' -fuzztime=$${FUZZTIME:-60s} ./capacity/

bench: build ## ratios vs the real pgbench, sysbench, redis-benchmark, wrk and vegeta, and sampler overhead (sampled/unsampled TPS), on embedded servers
	$(GO) run ./bench/vs-pgbench
	$(GO) run ./bench/vs-sysbench
	$(GO) run ./bench/sampler-overhead
	$(GO) run ./bench/vs-redis-benchmark
	$(GO) run ./bench/vs-wrk
	cd bench/vs-vegeta && $(GO) run .

demo: build ## a real 4-minute multixact scenario on a throwaway PostgreSQL: timeline, findings, run directory
	$(BIN) run examples/multixact.yaml

vet: ## go vet and gofmt check
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

clean: ## remove build output
	rm -rf bin
