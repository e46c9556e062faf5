# gaudi: pure-Go userspace driver for Intel Gaudi. Run "make help".

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
RACE        ?= -race

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

.PHONY: deps
deps: ## install from Debian what the suite needs (kernel sources, gcc, clang, prometheus and promtool) when missing
	./scripts/install-deps.sh

.PHONY: generate
generate: ## regenerate uapi/*/z*.go from Debian's linux-source-6.12, and hltrace's BPF object with clang, and gohlml/compat
	$(GO) run ./internal/cmd/genuapi
	$(GO) run ./internal/cmd/gencompat
	$(GO) generate ./tools/hltrace

.PHONY: check-generate
check-generate: ## fail when the generated files are not what the generators write
	$(GO) run ./internal/cmd/genuapi -check
	$(GO) run ./internal/cmd/gencompat -check
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	HLTRACE_GEN_DIR=$$tmp $(GO) generate ./tools/hltrace && \
	for f in bpf_bpfel.go bpf_bpfel.o; do \
		cmp -s "$$tmp/$$f" tools/hltrace/$$f || { echo "tools/hltrace/$$f is stale: run make generate" >&2; exit 1; }; \
	done

.PHONY: build
build: ## build everything, and prove the library builds without cgo
	$(GO) build ./...
	CGO_ENABLED=0 $(GO) build ./...

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: lint
lint: vet ## go vet and staticcheck
	$(STATICCHECK) ./...

.PHONY: unit
unit: ## all tests with the race detector (includes the ABI proof)
	$(GO) test $(RACE) -count=1 ./...

.PHONY: unit-oot
unit-oot: ## the library's tests again on the simulator's out-of-tree driver flavour (GAUDI_SIM_DRIVER=oot)
	GAUDI_SIM_DRIVER=oot $(GO) test $(RACE) -count=1 ./device/... ./memory/... ./dma/... ./stream/... ./control/... ./ipc/... ./simdevice/... ./ib/... ./examples/...

.PHONY: bench
bench: ## benchmarks with allocation counts
	$(GO) test -run=NONE -bench=. -benchmem ./...

.PHONY: bench-once
bench-once: ## every benchmark once, so none can rot
	$(GO) test -run=NONE -bench=. -benchtime=1x ./...

.PHONY: integration
integration: ## tests that need root, BPF or a VM kernel (run as root)
	$(GO) test -count=1 -run 'Integration' ./...

.PHONY: vmtest
vmtest: ## real-kernel tests in a QEMU guest (Debian 6.12, rxe, udmabuf); rdma's benchmarks again in a one-CPU guest and in a two-CPU guest whose CPUs run at once
	GO="$(GO)" ./scripts/vmtest/run.sh
	GAUDI_VMTEST_SMP=1 GAUDI_VMTEST_RUN='^$$' GAUDI_VMTEST_BENCHARGS='-test.cpu=1 -test.benchtime=3x' GO="$(GO)" ./scripts/vmtest/run.sh ./rdma
	GAUDI_VMTEST_SMP=2 GAUDI_VMTEST_TCG=multi GAUDI_VMTEST_RUN='^$$' GAUDI_VMTEST_BENCHARGS='-test.cpu=2 -test.benchtime=3x' GO="$(GO)" ./scripts/vmtest/run.sh ./rdma

.PHONY: vmtest-pair
vmtest-pair: ## opt-in: two QEMU guests on one virtual network, rxe on each NIC, ib/cm's Go-to-Go TestTwoGuests and examples/rdma-send's device memory to device memory across them
	GAUDI_VMTEST_PAIR=1 GO="$(GO)" ./scripts/vmtest/run.sh

.PHONY: test
test: deps ## what CI runs: deps, vet+staticcheck, generation check, cgo-free build, race tests (on both simulated driver flavours), ABI proof, benchmarks once, VM tests
	$(MAKE) lint check-generate build unit unit-oot bench-once vmtest
