# markerwave: `make run` runs the demo, `make test` runs the tests.
GO ?= go
# GOTEST runs the tests; CI sets it to gotestsum (see .ci/run) for a
# summary and a JUnit report.
GOTEST ?= $(GO) test
TLA2TOOLS ?=

# No DWARF debugging tables in any compiled package: the compiler's
# DWARF generation is about a fifth of its CPU time (modernc.org/sqlite,
# etcd's server and net/http from a cold cache, quiet 2 cores: 127 ->
# 100 CPU-s), the code generated is the same, and the test binaries are
# linked without the tables anyway (TESTFLAGS' -ldflags=-s -w; tracebacks
# and file:line come from the pclntab, which stays). In GOFLAGS, not a
# flag of one command, so that every go command make runs, and every one
# the tests run in turn (the mutation test's builds, the nemesis's go
# build of markerwave, web's make wasm), compiles with the same flags and
# shares the compiled packages in the build cache: go vet's compile of the
# dependencies is go test's, and the mutation test's unmutated packages
# are the first pass's; a make that the tests run (web's) adds nothing
# twice. A debugger needs the tables: build with go build, not make.
NODWARF = -gcflags=all=-dwarf=false
#
# The Go tools run through internal/toolexec/gogc (go's -toolexec; its
# comment says what it saves): the same compiled packages, in the same
# cache entries. Not when GOFLAGS already names a -toolexec (a make the
# tests run inherits make's), nor from a directory whose path has a
# space (GOFLAGS splits on them).
ifeq ($(filter -toolexec=%,$(GOFLAGS))$(word 2,$(CURDIR)),)
TOOLEXEC = -toolexec=$(CURDIR)/internal/toolexec/gogc
endif
override GOFLAGS := $(strip $(filter-out $(NODWARF),$(GOFLAGS)) $(NODWARF) $(TOOLEXEC))
export GOFLAGS

# The packages whose tests run under the race detector: the runtime, the
# transports and everything else with goroutines, and the FIFO check of
# the transports' channels, and the instrumentation (one Recorder shared
# by concurrent nodes). -race needs cgo, so a C compiler (gcc; Debian:
# build-essential) must be installed; the project's machine and golang
# Docker images have one.
#
# Left out of it: the database adapters (RACE_NOT): the sink's stores
# over SQLite and PostgreSQL, their tests and the Driver's on both
# databases (impl/dataflow/sink/sinkdb), and the test PostgreSQL
# (pgtest). Compiled with -race, modernc.org/sqlite (and its libc) and
# pgx cost about 43 CPU-seconds from a cold cache, a tenth of make test;
# they are compiled once, without it. The runtimes' tests with a real
# database (impl/dataflow/run's sink_test.go, a //go:build !race file)
# run in the first pass for the same reason. The same for the supervised
# mode's etcd coordination (impl/coord, impl/coord/etcdembed): its tests
# start a real etcd, whose server would be compiled again under the race
# detector (about 80 CPU-s more).
RACE_NOT = %/impl/dataflow/sink/sinkdb %/impl/dataflow/sink/pgtest %/impl/coord %/impl/coord/etcdembed
RACE_PKGS = $(filter-out $(RACE_NOT),$(shell $(GO) list ./impl/...)) ./conformance/fifo/ ./instrument/

# make test runs each test once: RACE_PKGS' tests only in the race pass
# (the same tests, with the race detector on), all others without it.
# impl/transport runs in both: its 16 MiB frame-size check runs only
# without -race (race_off_test.go; under -race it takes seconds); so does
# impl/dataflow/run, whose tests with a real database run only without
# it. A test that skips under -race (a //go:build !race file) belongs in
# a package kept here in both passes.
RACE_BOTH = %/impl/transport %/impl/dataflow/run
RACE_ONLY = $(filter-out $(RACE_BOTH),$(shell $(GO) list $(RACE_PKGS)))
MAIN_PKGS = $(filter-out $(RACE_ONLY),$(shell $(GO) list ./...))

.PHONY: run flow sink-nemesis test test-vet wasm-vet test-short vet vet-host vet-wasm wasm serve screenshots page-long tlc tlc-go tlc-trace fifo soak nemesis nemesis-supervised bench fmt

# The explorer page's WebAssembly: the Go model and the audit compiled for
# the browser (web/wasm), embedded into markerwave by go:embed. Built, never
# committed, and neither is wasm_exec.js, the glue of the same Go
# toolchain, copied beside it: every target that builds or tests markerwave builds it first,
# and web's TestWasmFresh rebuilds it into a temporary file (WASM_OUT) and
# fails if the embedded one differs (stale). -trimpath and -buildvcs=false
# make the bytes depend only on the sources and the Go toolchain.
WASM_OUT ?= web/static/main.wasm
# WASM_BUILDFLAGS are the wasm build's compile flags, which make vet's
# js/wasm vet uses too: the same flags, the same compile actions, so the
# standard library for js/wasm is compiled once, not once for each.
WASM_BUILDFLAGS = -trimpath -buildvcs=false

run:
	$(GO) run ./cmd/markerwave demo

# The dataflow demo: barrier snapshots, a failure, exactly-once restore,
# the results written through the two-phase-commit sink into
# out/flow/sink.db (SQLite; the sink killed after its third pre-commit)
# and queried back, with the barrier traces beside (out/flow is rewritten).
flow:
	rm -rf $(CURDIR)/out/flow
	$(GO) run ./cmd/markerwave flow --out $(CURDIR)/out/flow --kill-sink 3

# The kill-the-sink nemesis at length: SINK_FAULTS faults a case (make
# test runs 3), both runtimes, SQLite and a real PostgreSQL (Debian's
# postgresql package), exactly once checked by querying the database.
SINK_FAULTS ?= 40
sink-nemesis:
	MARKERWAVE_SINK_NEMESIS=$(SINK_FAULTS) $(GO) test -count=1 -timeout 30m -v -run '^TestSinkNemesis$$' ./impl/dataflow/run/

wasm:
	GOOS=js GOARCH=wasm $(GO) build $(WASM_BUILDFLAGS) -ldflags="-s -w" -o $(WASM_OUT) ./web/wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" $(dir $(WASM_OUT))wasm_exec.js

# The explorer page on http://127.0.0.1:8080/.
serve: wasm
	$(GO) run ./cmd/markerwave serve

# Rewrite the page's screenshots in docs/ (the browser tests take them).
screenshots: wasm
	MARKERWAVE_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestPageInBrowser$$' ./cmd/markerwave

# The page's browser test with the demo's run of 60,000 transfers (about
# 106k events) audited in the page (make test audits 20k events there).
page-long: wasm
	rm -rf $(CURDIR)/out/page-long
	$(GO) run ./cmd/markerwave demo --transfers 60000 --timeout 5m --out $(CURDIR)/out/page-long
	MARKERWAVE_PAGE_TRACE=$(CURDIR)/out/page-long/trace.jsonl $(GO) test -count=1 -v -run '^TestPageInBrowser$$' ./cmd/markerwave

# The complete suite, what CI runs (.ci/run): gofmt and vet, every test
# (the parity test against TLC's numbers and the mutation test included),
# RACE_PKGS under the race detector. From a cold build cache in a fresh
# clone on the project's 2-core machine with nothing else running
# (2026-12-07, CI=true .ci/run): 3 min 4 s to 3 min 17 s, 340 to 367
# CPU-seconds, around its 3-minute budget and mostly over it
# (docs/performance.md#the-test-suites-time).
#
# -vet=off: make vet has vetted every package, tests included, with all
# of vet's checks (go test's own vet runs a subset of them again).
# -ldflags=-s -w: the test binaries are linked without DWARF and symbol
# tables (about a third less link time; tracebacks keep file:line).
# -timeout: go test's default of 10 minutes a package is what the mutation
# test alone took on a two-core machine seven other builds were loading;
# 20 minutes keeps a slow machine from failing a suite that passes.
TESTFLAGS = -count=1 -timeout 20m -vet=off -ldflags=-s\ -w
#
# The two passes run side by side: the race pass's build (the standard
# library and the dependencies compiled with -race) is CPU-bound, and it
# fills the cores while the first pass's tests wait on sockets, processes
# and the browser. Nothing is compiled twice: no package is built by both
# passes (the mutation test builds its -race binary after the others, by
# which time the race pass has compiled what it shares). The race pass's
# output is printed after the first pass's, and make test fails if either
# fails.
test: test-vet
	@log=$$(mktemp); \
	echo "$(GOTEST) $(TESTFLAGS) -race $(RACE_PKGS)  # beside the next one; its output follows it"; \
	$(GOTEST) $(TESTFLAGS) -race $(RACE_PKGS) >$$log 2>&1 & race=$$!; \
	echo "$(GOTEST) $(TESTFLAGS) $(MAIN_PKGS)"; \
	$(GOTEST) $(TESTFLAGS) $(MAIN_PKGS); main=$$?; \
	wait $$race; raced=$$?; \
	echo "== the race pass (exit status $$raced):"; cat $$log; rm -f $$log; \
	test $$main = 0 && test $$raced = 0

# make test's first step: make vet and make wasm, side by side (their
# builds share nothing: one is for linux, the other for js/wasm), the
# js/wasm vet after the wasm build, whose compiled packages it reuses.
test-vet:
	@$(MAKE) --no-print-directory -j2 vet-host wasm-vet
wasm-vet: wasm
	@$(MAKE) --no-print-directory vet-wasm

# The fast loop: every test in -short mode (the mutation test, the demo
# over TCP and the long runs skip), from the build cache. Under 30 s.
# -p 4: four packages' tests at a time, not one a core: most of them wait
# on sockets, node processes, etcd and timers rather than compute, so two
# at a time left the cores half idle (a full rerun, -count=1, warm, load
# 2: 42.5 s with -p 2, 27.7 s with -p 4, 28.3 s with -p 6; about 48
# CPU-seconds each; on 2026-12-07's machine 20 runs in a row took a
# median of 23.9 s, 38 CPU-seconds).
test-short: wasm
	$(GO) test -p 4 -short ./...

vet: vet-host vet-wasm
vet-host:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
vet-wasm:
	GOOS=js GOARCH=wasm $(GO) vet $(WASM_BUILDFLAGS) ./web/wasm

# Model-check every model in tla/manifest.json with TLC and with the Go
# explorer and compare the counts. TLA2TOOLS must name tla2tools.jar.
tlc:
	$(GO) run ./cmd/tlcrun -jar "$(TLA2TOOLS)" -manifest tla/manifest.json

# Measure the Go explorer's numbers again and record them in the manifest
# (no TLC needed).
tlc-go:
	$(GO) run ./cmd/tlcrun -go-only -update -manifest tla/manifest.json

# Validate a recorded trace against tla/ChandyLamport.tla with TLC:
#   make tlc-trace TRACE=traces/conforms/token-ring.jsonl TLA2TOOLS=/path/to/tla2tools.jar
tlc-trace:
	@test -n "$(TRACE)" || { echo "usage: make tlc-trace TRACE=trace.jsonl TLA2TOOLS=/path/to/tla2tools.jar"; exit 2; }
	@test -n "$(TLA2TOOLS)" || { $(GO) run ./cmd/tlcrun -jar ""; exit 2; }
	$(GO) run ./cmd/markerwave export --tlc out/tlc-trace --run-tlc "$(TLA2TOOLS)" $(TRACE)

# Porcupine: the transports' channels are linearizable FIFO queues.
fifo:
	$(GO) test -count=1 ./conformance/fifo/

# A long lockstep soak of the core against the model (about a minute on 2 cores).
soak:
	$(GO) test -count=1 ./conformance -run TestLockstep -rapid.checks=20000 -rapid.steps=200

# The nemesis test's long form: NEMESIS_CYCLES crashes and recoveries of
# real node processes with network faults between them (make test runs 2
# cycles; about 5 s a cycle), its figures printed and written to NEMESIS_REPORT.
NEMESIS_CYCLES ?= 20
NEMESIS_REPORT ?= out/nemesis-report.json
nemesis:
	mkdir -p $(dir $(NEMESIS_REPORT))
	NEMESIS_CYCLES=$(NEMESIS_CYCLES) NEMESIS_REPORT=$(abspath $(NEMESIS_REPORT)) $(GO) test -count=1 -v -timeout 60m -run '^TestNemesis$$' ./conformance/nemesis/

# The supervised mode's nemesis at length, with no operator step:
# NEMESIS_CYCLES cycles (make test runs 2; about 4 s a cycle) of network
# faults, then in turn a kill -9 of a node, a second node killed during
# the recovery, a supervisor cut from etcd past its lease, and the etcd
# member killed -9 and restarted (then a node killed), three markerwave
# supervise processes and a real etcd member behind toxiproxy; its
# figures printed and written to NEMESIS_SUPERVISED_REPORT.
NEMESIS_SUPERVISED_REPORT ?= out/nemesis-supervised-report.json
nemesis-supervised:
	mkdir -p $(dir $(NEMESIS_SUPERVISED_REPORT))
	NEMESIS_CYCLES=$(NEMESIS_CYCLES) NEMESIS_REPORT=$(abspath $(NEMESIS_SUPERVISED_REPORT)) $(GO) test -count=1 -v -timeout 60m -run '^TestNemesisSupervised$$' ./conformance/nemesis/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
