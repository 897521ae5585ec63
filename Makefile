# Machine API Operator. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(ROOT)/bin
LOCAL := $(ROOT)/.local
export GOTOOLCHAIN := local
# Tests and scripts find the binaries here (see pkg/testenv).
export KUBEBUILDER_ASSETS := $(BIN)

MODULE := github.com/machine-api-operator/machine-api-operator
VERSION ?= $(shell git describe --tags --abbrev=8 --dirty --always 2>/dev/null)
LDFLAGS := -X $(MODULE)/pkg/version.Raw=$(VERSION)

##@ Tools (pinned by hack/tools/go.mod, built from the Go module proxy)

TOOLS_MOD := hack/tools/go.mod hack/tools/go.sum hack/build-tool.sh
tool.kube-apiserver          := k8s.io/kubernetes/cmd/kube-apiserver
tool.kube-controller-manager := k8s.io/kubernetes/cmd/kube-controller-manager
tool.kube-scheduler          := k8s.io/kubernetes/cmd/kube-scheduler
tool.kubectl                 := k8s.io/kubernetes/cmd/kubectl
tool.etcd                    := go.etcd.io/etcd/server/v3
tool.kwok                    := sigs.k8s.io/kwok/cmd/kwok
tool.kwokctl                 := sigs.k8s.io/kwok/cmd/kwokctl
tool.kustomize               := sigs.k8s.io/kustomize/kustomize/v5
tool.controller-gen          := sigs.k8s.io/controller-tools/cmd/controller-gen
# The local cluster's binaries: what make run, the e2e, chaos and bench
# targets build (not controller-gen, promtool, golangci-lint or shellcheck,
# which only make generate, make test and make lint use).
CLUSTER_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl kustomize
CLUSTER_BINS := $(addprefix $(BIN)/,$(CLUSTER_TOOLS))
# promtool (alert rule unit tests) is pinned by a module of its own, so that
# its dependencies leave the Kubernetes binaries' pins alone.
PROMTOOL_MOD := hack/tools/promtool/go.mod hack/tools/promtool/go.sum hack/build-tool.sh
# golangci-lint (make lint) likewise.
GOLANGCI_LINT_MOD := hack/tools/golangci-lint/go.mod hack/tools/golangci-lint/go.sum hack/build-tool.sh
# govulncheck and golang.org/x/vulndb (make vulncheck) likewise: vulndb's
# OSV files at the pinned version, indexed by its cmd/indexdb, are the local
# vulnerability database (bin/vulndb); nothing is fetched from vuln.go.dev.
VULN_MOD := hack/tools/vuln/go.mod hack/tools/vuln/go.sum hack/build-tool.sh
VULNDB := $(BIN)/vulndb

.PHONY: tools
tools: cluster-tools $(BIN)/controller-gen $(BIN)/promtool ## Build kube-apiserver, etcd, kubectl, kwok, kustomize, controller-gen, promtool into bin/ (once; cold build times in docs/performance.md)

.PHONY: cluster-tools
cluster-tools: $(CLUSTER_BINS) ## Build only the local cluster's binaries into bin/ (what make run needs)

.PHONY: test-tools
test-tools: cluster-tools $(BIN)/promtool ## Build what make test runs: the local cluster's binaries (kube-apiserver, etcd, kubectl, kustomize, kwok) and promtool

# The local cluster's binaries are built together by one go build (see
# hack/build-tool.sh), and again only when the pins change, so a second run
# does nothing.
$(CLUSTER_BINS) &: $(TOOLS_MOD)
	@hack/build-tool.sh $(foreach t,$(CLUSTER_TOOLS),$(t) $(tool.$(t)))

$(BIN)/controller-gen: $(TOOLS_MOD)
	@hack/build-tool.sh controller-gen $(tool.controller-gen)

$(BIN)/promtool: $(PROMTOOL_MOD)
	@hack/build-tool.sh promtool github.com/prometheus/prometheus/cmd/promtool

$(BIN)/golangci-lint: $(GOLANGCI_LINT_MOD)
	@hack/build-tool.sh golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

# shellcheck (make lint) is Debian's package at the version pinned in
# hack/shellcheck.sh, unpacked into bin/ without installing it (see there).
$(BIN)/shellcheck: hack/shellcheck.sh
	@hack/shellcheck.sh install $@

.PHONY: lint-tools
lint-tools: $(BIN)/golangci-lint $(BIN)/shellcheck ## Build golangci-lint and unpack shellcheck into bin/ (what make lint runs)

$(BIN)/govulncheck $(BIN)/vulndb-index &: $(VULN_MOD)
	@BIN_DIR=$(BIN) hack/build-tool.sh govulncheck golang.org/x/vuln/cmd/govulncheck vulndb-index golang.org/x/vulndb/cmd/indexdb

# Built beside the old one and swapped in, so an interrupted build leaves no
# half database behind.
$(VULNDB)/index/db.json: $(BIN)/vulndb-index $(VULN_MOD)
	@osv=$$(cd hack/tools/vuln && go mod download golang.org/x/vulndb && go list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv; \
	echo "vulndb: indexing $$osv"; \
	rm -rf $(VULNDB).new && $(BIN)/vulndb-index -vulns "$$osv" -out $(VULNDB).new && \
	rm -rf $(VULNDB) && mv $(VULNDB).new $(VULNDB)

# govc and vcsim (the local vSphere, PLATFORM=vsphere) are pinned by
# hack/tools/govmomi and built on demand, not by make tools (~70 s together).
GOVMOMI_MOD := hack/tools/govmomi/go.mod hack/tools/govmomi/go.sum hack/build-tool.sh
$(BIN)/govc $(BIN)/vcsim &: $(GOVMOMI_MOD) hack/tools/govmomi/govc/main.go $(wildcard hack/tools/govmomi/vcsim/*.go)
	@hack/build-tool.sh govc ./govc vcsim ./vcsim

.PHONY: vsphere-tools
vsphere-tools: $(BIN)/govc $(BIN)/vcsim ## Build govc and vcsim (govmomi v0.54.0) into bin/ for the local vSphere

##@ Build and test

# One go build for all: one binary links while the next compiles. Without
# -trimpath (the Dockerfile's release build has it) the packages are compiled
# as go vet and go test without -race compile them, so after make lint (as in
# .ci/run) this only links.
.PHONY: build
build: ## Build every binary of this project into bin/ (and the local pod runner, bin/local-pods)
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./test/localpods/local-pods

.PHONY: test
test: test-tools ## Run every unit and envtest test (go test -race ./...)
	go test -race -count=1 ./...

.PHONY: test-rules
test-rules: $(BIN)/promtool ## Unit-test the alerting rules of install/ with promtool (hack/monitoring/alerts_test.yaml)
	go test -count=1 -v -run 'TestAlertRules' ./pkg/install/

.PHONY: lint
lint: lint-tools ## go vet and golangci-lint (.golangci.yml; also the e2e and chaos suites), shellcheck on every script, gofmt check
	go vet ./...
	go vet -tags e2e ./test/e2e/
	go vet -tags chaos ./test/chaos/
	$(BIN)/golangci-lint run ./...
	hack/shellcheck.sh check $(BIN)/shellcheck
	@# Tracked and new (untracked, not ignored) files that exist in the working tree.
	@out=$$(git ls-files -co --exclude-standard '*.go' | while read -r f; do [ ! -e "$$f" ] || echo "$$f"; done | xargs -r gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# govulncheck exits 0 with -format json whatever it finds; hack/vulncheck
# decides (and fails on an empty or broken stream), pipefail keeps
# govulncheck's own errors.
.PHONY: vulncheck
vulncheck: $(BIN)/govulncheck $(VULNDB)/index/db.json ## govulncheck ./... against the local database of the pinned golang.org/x/vulndb: fails on a reachable known vulnerability (standard library ones of the toolchain only if listed in hack/vulncheck/accepted.txt)
	$(BIN)/govulncheck -db file://$(VULNDB) -format json ./... | go run ./hack/vulncheck -accepted hack/vulncheck/accepted.txt

FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Fuzz each fuzz test (func Fuzz* in *_fuzz_test.go) for FUZZTIME (default 30s); make test runs their seed corpora
	@for file in $$(git ls-files --cached --others --exclude-standard '*_fuzz_test.go'); do \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "go test ./$$(dirname "$$file") -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME)"; \
			go test "./$$(dirname "$$file")" -run '^$$' -fuzz "^$$name\$$" -fuzztime "$(FUZZTIME)"; \
		done; \
	done

.PHONY: generate
generate: $(BIN)/controller-gen ## Regenerate deepcopy code of this project's API types (pkg/apis)
	$(BIN)/controller-gen object paths=./pkg/apis/...
	$(BIN)/controller-gen crd paths=./pkg/apis/nodemaintenance/... output:crd:dir=manifests/crds/nodemaintenance
	$(BIN)/controller-gen crd paths=./pkg/apis/machinedeployment/... output:crd:dir=manifests/crds/machinedeployment

.PHONY: verify
verify: $(BIN)/controller-gen ## Fail if make generate, the CRD copies (verify-crds) or go mod tidy (every module) would change a file
	hack/verify.sh

.PHONY: update-crds
update-crds: ## Copy the CRDs from the pinned openshift/api into manifests/crds and install/
	hack/update-crds.sh

.PHONY: verify-crds
verify-crds: ## Fail if the CRDs in manifests/crds or install/ differ from the pinned openshift/api
	hack/update-crds.sh --verify

##@ Local cluster (kwok, every component a local process)

export KUBECONFIG_LOCAL := $(LOCAL)/kubeconfig

.PHONY: cluster-up
cluster-up: cluster-tools ## Start the local cluster "machine-api"; kubeconfig in .local/kubeconfig
	hack/cluster.sh up

.PHONY: cluster-down
cluster-down: ## Delete the local cluster and stop all its processes
	hack/cluster.sh down

# PLATFORM=vsphere: a VSphere platform served by vcsim (hack/vsphere/run.sh).
PLATFORM ?= kubemark

.PHONY: run
run: cluster-tools build $(if $(filter vsphere,$(PLATFORM)),vsphere-tools vsphere-kubelet) ## Start the local cluster and install the Machine API on it (PLATFORM=kubemark; vsphere: docs/vsphere.md)
	@case "$(PLATFORM)" in kubemark) hack/run.sh ;; vsphere) hack/vsphere/run.sh ;; \
	*) echo "PLATFORM=$(PLATFORM): use kubemark (default) or vsphere" >&2; exit 2 ;; esac

.PHONY: vsphere-kubelet
vsphere-kubelet: ## Build the local vSphere's stand-in kubelet (test/vsphere) into bin/
	go build -o $(BIN)/vsphere-kubelet ./test/vsphere/vsphere-kubelet

.PHONY: kubemark-infra
kubemark-infra: ## Set the Infrastructure status to External/kubemark (after kustomize build config | kubectl apply)
	hack/kubemark-infra.sh

##@ End-to-end

.PHONY: test-e2e
test-e2e: ## Run the e2e suite against the cluster in $KUBECONFIG
	@[ -n "$${KUBECONFIG:-}" ] || { echo "KUBECONFIG is not set: point it at a cluster (make cluster-up writes .local/kubeconfig) or use make test-e2e-local"; exit 1; }
	KUBECONFIG=$$(realpath -m "$$KUBECONFIG") go test -tags e2e -count=1 -timeout 30m -v ./test/e2e/...

.PHONY: test-e2e-local
test-e2e-local: cluster-tools build ## Bring up the local cluster, run the e2e suite on it, tear it down
	hack/e2e-local.sh

.PHONY: test-e2e-vsphere
test-e2e-vsphere: vsphere-tools vsphere-kubelet cluster-tools build ## Bring up a dedicated PLATFORM=vsphere cluster (vcsim), run the TestVSphere e2e tests on it, tear it down
	hack/vsphere/e2e.sh

.PHONY: chaos
chaos: cluster-tools build ## Chaos suite on a dedicated local cluster: SIGKILLs, API server outage, etcd restart, leader failover (CHAOS_KILLS=5, CHAOS_SEED=1)
	hack/chaos.sh

##@ Benchmarks

.PHONY: bench
bench: cluster-tools build ## MachineSet scale benchmark on a dedicated local cluster (REPLICAS=500, PROFILE=1 for CPU profiles; SCENARIO=rollout: a MachineDeployment rollout of 100)
	hack/bench.sh

.PHONY: bench-vsphere
bench-vsphere: ## vSphere scale figures on the running make run PLATFORM=vsphere cluster: 0→REPLICAS→0 (default 20), latency, vCenter requests per Machine
	@[ -f .local/vsphere.env ] || { echo "no local vSphere (.local/vsphere.env): make run PLATFORM=vsphere first"; exit 1; }
	. .local/vsphere.env && KUBECONFIG=$(CURDIR)/.local/kubeconfig VSPHERE_BENCH_REPLICAS=$(or $(REPLICAS),20) \
		go test -tags e2e -count=1 -timeout 30m ./test/e2e/ -run '^TestBenchVSphere$$' -v | tee .local/bench-vsphere.txt

##@ Other

.PHONY: clean
clean: cluster-down ## Remove build output (keeps the tools in bin/)
	rm -f $(addprefix $(BIN)/,$(notdir $(wildcard cmd/*))) $(BIN)/local-pods
	rm -rf $(LOCAL)

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
