# splitbrain: `make chaos` runs the chaos suite, `make test` the tests. Both set up what is
# missing (Docker engine, images) on their own.
SHELL := /bin/bash
GO ?= go
BIN := bin/splitbrain
export TESTCONTAINERS_RYUK_DISABLED := true
export TESTCONTAINERS_HOST_OVERRIDE := localhost
export CGO_ENABLED := 0

.PHONY: all deps build images test unit chaos-test chaos nightly vet clean-docker

all: build

deps:
	@./scripts/ensure-docker.sh

# Static binary: the candidate image copies it into a FROM scratch image.
build:
	$(GO) build -o $(BIN) ./cmd/splitbrain

images: deps build
	./$(BIN) images build

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags chaos ./...

unit:
	$(GO) test -count=1 ./...

# Real servers, real faults. -short (and CI=true) picks the smoke subset.
chaos-test: images
	$(GO) test -count=1 -tags chaos -timeout 60m $(if $(CI),-short,) ./...

test: vet unit chaos-test

chaos: images
	./$(BIN) clean

nightly: images
	$(GO) test -count=1 -tags chaos -timeout 120m ./...

clean-docker:
	./$(BIN) clean
