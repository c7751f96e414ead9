# splitbrain: `make chaos` runs the chaos suite, `make test` the tests. Both set up what is
# missing (Docker engine, images) on their own.
SHELL := /bin/bash
GO ?= go
BIN := bin/splitbrain
export TESTCONTAINERS_RYUK_DISABLED := true
export TESTCONTAINERS_HOST_OVERRIDE := localhost
export CGO_ENABLED := 0
# The candidate image copies this binary; naming it saves every run a `go build` check.
export SPLITBRAIN_BINARY := $(abspath $(BIN))
# Run directories and store/index.html land here whichever package's tests made them.
export SPLITBRAIN_STORE_DIR ?= $(abspath store)

.PHONY: all deps browser build core rootfs images test unit chaos-test chaos nightly vet clean-docker

all: build

deps:
	@./scripts/ensure-docker.sh

# The chaos build's page tests open report.html and index.html in headless Chromium.
browser:
	@./scripts/ensure-chromium.sh

# Static binary: the candidate image copies it into a FROM scratch image. -trimpath, as the
# core and the matrix's own full build: the Go cache then serves a clone in another directory.
build:
	$(GO) build -trimpath -o $(BIN) ./cmd/splitbrain

# The core build leaves out the stores whose clients are heavy (client-go, the AWS SDK,
# Consul's API: 637 packages instead of 1154), so a bare machine's first verdict does not wait
# for them; `matrix --full-binary` builds the full binary beside the core's rows and hands it
# the Kubernetes, DynamoDB and Consul rows (docs/suite.md). Both are built -trimpath, as the
# store servers are (internal/images), so the packages they share come from one Go cache entry.
CORE := bin/splitbrain-core
core:
	$(GO) build -trimpath -tags core -o $(CORE) ./cmd/splitbrain

# The base image's debootstrap, started in the background before the harness compiles: a
# program of the standard library only (seconds to build) that prepares the tree the image
# builder then imports, so on a bare machine the downloads and unpacking overlap the compile
# (internal/images/rootfs). With the base image there it exits at once. Its log: ROOTFS_LOG.
ROOTFS_LOG ?= /var/tmp/splitbrain-rootfs.log
rootfs: deps
	@$(GO) build -o bin/splitbrain-rootfs ./cmd/splitbrain-rootfs
	@./bin/splitbrain-rootfs >$(ROOTFS_LOG) 2>&1 </dev/null &

images: deps rootfs build
	./$(BIN) images build

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@# -trimpath, as the builds: without it a clone in a new directory compiles and vets every
	@# package again (go vet -tags chaos ./... in a fresh clone: 55 CPU-s, -trimpath 3).
	$(GO) vet -trimpath ./...
	$(GO) vet -trimpath -tags chaos ./...
	@# The core build (make chaos): its own files and the command it makes compile.
	$(GO) vet -trimpath -tags core ./candidates/ ./internal/stores/ ./cmd/splitbrain/
	@# The workflows run nowhere here; actionlint (a go tool in go.mod) checks their syntax,
	@# expressions and action inputs so a broken nightly is caught before it is scheduled.
	$(GO) tool actionlint -shellcheck= -pyflakes= .github/workflows/*.yml

unit:
	$(GO) test -count=1 ./...

# Real servers, real faults. -short picks the smoke subset of the matrix (suite/matrix.yaml);
# the full matrix is `make nightly`.
# The chaos build includes every unit test (no file is built only without the tag), so `test`
# runs them once, here. Chaos packages mostly wait on servers and faults: CHAOS_P of them run
# at once (go test -p), beyond the two cores, which halves the wall time (docs/performance.md).
# 4 since 2026-11-29: the packages' times add up to about 1,750 s, so at 3 the tests alone took
# 10 min (a clean clone: 12 min 13 s at 3, 8 min 59 s at 4, every package ok both times).
CHAOS_P ?= 4
# The output is go test's without -v, then the slowest tests and when each package ran; every
# test's time goes to TEST_TIMES (cmd/splitbrain-testtimes reads go test -json), so a run shows
# where its minutes went.
TEST_TIMES ?= $(SPLITBRAIN_STORE_DIR)/test-times.tsv
# go test starts packages in the order they are named: the longest first (LONGEST_FIRST; in a
# clean-clone run on 2026-11-29: harness 466 s, suite 394, examples 342, candidates 217, nemesis
# 207, cmd 155, stores 144, reports 82, images 69, explore 39, platform 23), so the short ones
# fill the last minute instead of a 200-second package starting last (by the alphabet nemesis,
# stores and reports did: 12 min 3 s, against 10 min 25 s in this order).
LONGEST_FIRST := ./harness/ ./suite/ ./examples/ ./candidates/ ./nemesis/ ./cmd/splitbrain/ ./internal/stores/ ./reports/ ./internal/images/ ./explore/ ./internal/platform/ ./internal/layers/
# The test binaries are built -trimpath (without it every package's cache entry names its
# directory, so a clone elsewhere compiles all of them again: 95 against 58 CPU-s of compile in
# two clean-clone runs), link without DWARF (-w: a quarter of each link's CPU, and make test
# links about fifty) and skip go test's vet pass, a subset of the full vet `test` has just run.
TEST_BUILD_FLAGS := -trimpath -ldflags=-w -vet=off
chaos-test: images browser
	@$(GO) build -o bin/splitbrain-testtimes ./cmd/splitbrain-testtimes
	@mkdir -p $(dir $(TEST_TIMES))
	set -o pipefail; $(GO) test -json -count=1 -p $(CHAOS_P) -tags chaos -short -timeout 60m $(TEST_BUILD_FLAGS) $(LONGEST_FIRST) ./... | ./bin/splitbrain-testtimes -out $(TEST_TIMES)

test: vet chaos-test

# The default tier of the known-answer matrix (docs/suite.md): every store, recipe and fault
# kind, the zombie leader fenced and unfenced, every negative control, one telling pair per library and three Pacemaker rows (84 rows, event-paced:
# phases end on events; seven rows at once, longest first, a store's rows in at most half the
# slots, and six while images or the full binary build in the background (seven beside the
# builds of a bare machine took node-redlock's row a write its helper had given up, 2 runs of
# 2): under 4 min on a quiet 2-core machine with images present. Eight, before the per-store
# cap, starved a client under test; docs/performance.md. MATRIX_PARALLEL=N runs N at once,
# N-1 while building). Prints the verdict table and store/index.html;
# fails when any row's outcome differs from the matrix.
# The images every row needs are built first; each store's image then builds in the
# background at the lowest CPU weight while the rows whose images exist run (docs/suite.md).
MATRIX_PARALLEL ?= 7
# Up to this many rows beyond MATRIX_PARALLEL while the cores idle (half a core for 3 s), taken
# back when they are busy (docs/suite.md, "Rows while the cores idle"): in three runs taking
# turns, 200, 181 and 189 s against 210, 207 and 197 s without (docs/performance.md). Not
# in nightly, whose longer rows have not been measured with it.
MATRIX_IDLE_EXTRA ?= 2
chaos: deps rootfs core
	SPLITBRAIN_BINARY=$(abspath $(CORE)) ./$(CORE) matrix --tags default --parallel $(MATRIX_PARALLEL) --idle-extra $(MATRIX_IDLE_EXTRA) --full-binary $(BIN)

# Every row of the matrix; store/junit.xml has one testcase per row. SHARD=I/N runs one
# balanced share (the nightly workflow fans out that way; docs/scale.md).
SHARD ?=
nightly: deps rootfs core
	SPLITBRAIN_BINARY=$(abspath $(CORE)) ./$(CORE) matrix --tags nightly --parallel $(MATRIX_PARALLEL) --full-binary $(BIN) $(if $(SHARD),--shard $(SHARD))

clean-docker:
	./$(BIN) clean --all
