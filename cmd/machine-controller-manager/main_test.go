package main

import (
	"context"
	"errors"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
)

// TestCommandLine: the rendered and OpenShift's command lines start the binary (OpenShift's:
// featureGateArgs, plus --max-concurrent-reconciles=10 (Azure, GCP) and tlsArgs (BareMetal)), bad
// ones do not.
func TestCommandLine(t *testing.T) {
	args := append(operandtest.FeatureGateArgs(), "--max-concurrent-reconciles=10")
	args = append(args, operandtest.TLSArgs()...)
	operandtest.CommandLines(t, operandtest.Binary{
		Command:   "/machine-controller-manager",
		Parse:     func(args []string) (operand.Options, error) { o, _, err := parse(args); return o, err },
		OpenShift: append(args, operandtest.UpstreamFlags(":9440", ":8081", false)...),
		Want:      operandtest.Want{HealthAddr: ":9440", MetricsAddr: ":8081", FeatureGates: true, TLS: true},
	})
}

// TestLeaseFor: on vSphere the binary holds OpenShift's vSphere controller's
// Lease, elsewhere the kubemark one. Breaks if: leaseFor ignored the
// platform (both controllers could lead at once during a switch).
func TestLeaseFor(t *testing.T) {
	for platform, want := range map[configv1.PlatformType]string{
		configv1.VSpherePlatformType:  "cluster-api-provider-vsphere-leader",
		configv1.ExternalPlatformType: "cluster-api-provider-kubemark-leader",
		"":                            "cluster-api-provider-kubemark-leader",
	} {
		if got := leaseFor(platform); got != want {
			t.Errorf("leaseFor(%q) = %q, want %q", platform, got, want)
		}
	}
}

// Breaks if: platformOf took a transient or RBAC error for "no platform" (on vSphere the binary
// would take the kubemark Lease beside OpenShift's vSphere controller), or retried a definite answer.
func TestPlatformOf(t *testing.T) {
	vsphere := &configv1.Infrastructure{Status: configv1.InfrastructureStatus{
		PlatformStatus: &configv1.PlatformStatus{Type: configv1.VSpherePlatformType}}}
	gr := schema.GroupResource{Group: configv1.GroupName, Resource: "infrastructures"}
	for _, tc := range []struct {
		name    string
		infra   *configv1.Infrastructure
		err     error
		want    configv1.PlatformType
		decided bool
	}{
		{"vSphere", vsphere, nil, configv1.VSpherePlatformType, true},
		{"no platform status", &configv1.Infrastructure{}, nil, "", true},
		{"no Infrastructure", &configv1.Infrastructure{}, apierrors.NewNotFound(gr, "cluster"), "", true},
		{"no such API", &configv1.Infrastructure{}, &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: configv1.GroupName, Kind: "Infrastructure"}}, "", true},
		{"API server unavailable", &configv1.Infrastructure{}, apierrors.NewServiceUnavailable("etcd leader changed"), "", false},
		{"timeout", &configv1.Infrastructure{}, apierrors.NewTimeoutError("", 1), "", false},
		{"forbidden", &configv1.Infrastructure{}, apierrors.NewForbidden(gr, "cluster", errors.New("RBAC")), "", false},
		{"connection refused", &configv1.Infrastructure{}, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused"), "", false},
	} {
		got, decided, _ := platformOf(tc.infra, tc.err)
		if got != tc.want || decided != tc.decided {
			t.Errorf("%s: platformOf = %q, decided %v; want %q, %v", tc.name, got, decided, tc.want, tc.decided)
		}
	}
}

// Breaks if: readPlatform gave up at the first error, or never gave up.
func TestReadPlatformRetries(t *testing.T) {
	calls := 0
	flaky := func(_ context.Context, infra *configv1.Infrastructure) error {
		if calls++; calls < 3 {
			return apierrors.NewServiceUnavailable("starting")
		}
		infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.VSpherePlatformType}
		return nil
	}
	got, err := readPlatform(context.Background(), flaky, time.Millisecond, 10*time.Second)
	if err != nil || got != configv1.VSpherePlatformType || calls != 3 {
		t.Errorf("flaky API server: %q, %v after %d reads; want VSphere after 3", got, err, calls)
	}
	down := func(context.Context, *configv1.Infrastructure) error { return apierrors.NewServiceUnavailable("down") }
	if got, err := readPlatform(context.Background(), down, time.Millisecond, 50*time.Millisecond); err == nil || got != "" {
		t.Errorf("API server down: %q, %v; want an error", got, err)
	}
}
