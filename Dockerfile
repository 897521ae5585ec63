# One image holds the operator, every operand binary (at /, where the rendered
# Deployments run them: /machine-api-operator, /machineset-controller, ...) and
# the release payload at /manifests.
# Built by CI/release tooling (there is no Docker engine in the dev sandbox).
FROM docker.io/library/golang:1.26 AS builder
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN go build -trimpath \
      -ldflags "-X github.com/machine-api-operator/machine-api-operator/pkg/version.Raw=${VERSION}" \
      -o /out/ ./cmd/...

FROM registry.access.redhat.com/ubi9/ubi-minimal:latest
COPY --from=builder /out/ /
COPY install/ /manifests/
LABEL io.openshift.release.operator=true \
      io.k8s.display-name="Machine API Operator" \
      io.k8s.description="Manages Machines, MachineSets and MachineHealthChecks"
USER 65532:65532
ENTRYPOINT ["/machine-api-operator"]
