# carve: make builds bin/carve, bin/carve-dra and bin/libcarve.so; make test
# runs every test that needs no GPU (the shim is tested against a fake
# libcuda), carve-dra's end-to-end tests against a control plane and a
# kubelet that make kube builds from their Go modules (test/kube) and a
# containerd that make node builds from its own (test/node); make soak runs the tests of
# the packages tide's tenants go through 50 times beside a loaded CPU;
# make fuzz runs each fuzz target for FUZZTIME (default 10m).
GO      ?= go
CC      ?= cc
CFLAGS  ?= -O2 -Wall -Wextra -Werror
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build test lint clean kube node soak fuzz
build: bin/carve bin/carve-dra bin/libcarve.so

GOSRC := $(shell find cmd internal -name '*.go' -o -name '*.ptx' -o -name '*.py') go.mod go.sum
bin/carve: $(GOSRC)
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/carve

bin/carve-dra: $(GOSRC)
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/carve-dra

# internal/shimtest builds the shim the same way for tests.
bin/libcarve.so: $(wildcard shim/*.c shim/*.h)
	@mkdir -p bin
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -shared -o $@ $(wildcard shim/*.c) -ldl -pthread

# kube-apiserver, kube-scheduler and etcd for internal/dra/e2e's tests,
# and the kubelet for its TestRealNode
kube: build/kube/.built
build/kube/.built: test/kube/go.mod test/kube/go.sum test/kube/tools.go test/kube/etcd/main.go
	cd test/kube && CGO_ENABLED=0 $(GO) build -o ../../build/kube/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kubelet ./etcd
	touch $@

# containerd, its runc shim and ctr for internal/dra/e2e's TestRealNode, static
# (without the snapshotters that need cgo: btrfs, devmapper, zfs); the
# test runs them with Debian's runc (apt-get install runc)
node: build/node/.built
build/node/.built: test/node/go.mod test/node/go.sum test/node/tools.go
	cd test/node && CGO_ENABLED=0 $(GO) build -tags "no_btrfs no_devmapper no_zfs no_tracing" -o ../../build/node/ \
		github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
		github.com/containerd/containerd/v2/cmd/ctr
	touch $@

test: kube node
	CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...
	GO=$(GO) FUZZTIME=$(TEST_FUZZTIME) test/fuzz.sh

# each fuzz target (test/fuzz.sh) for FUZZTIME, one after another; make
# test runs each for TEST_FUZZTIME inputs: a count, not a time, since Go's
# fuzzer fails a time-limited run whose deadline passes while a worker
# still holds a slow input ('context deadline exceeded'), as on a loaded
# 2-core machine
FUZZTIME ?= 10m
TEST_FUZZTIME ?= 2000x
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) test/fuzz.sh

# the tests of the shim (shim/shimtest), ctl, place, daemon, dra and dra/e2e
# SOAK_COUNT times over, beside two CPU-bound processes (test/soak.sh); not
# part of make test
SOAK_COUNT ?= 50
soak:
	GO=$(GO) test/soak.sh $(SOAK_COUNT)

# gofmt, and staticcheck at the version go.mod pins (its tool directive)
lint:
	@unformatted=$$(gofmt -l cmd internal test); if [ -n "$$unformatted" ]; then echo "not gofmt-ed: $$unformatted"; exit 1; fi
	CGO_ENABLED=0 $(GO) tool staticcheck ./...

clean:
	rm -rf bin build
