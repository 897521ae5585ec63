// Package operandtest holds the command lines OpenShift's operator passes to
// the operand containers, so each binary's tests check it accepts them.
package operandtest

import (
	"maps"
	"testing"
	"time"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
)

// Namespace is the operand namespace OpenShift's operator passes.
const Namespace = "openshift-machine-api"

// CommonArgs are the arguments OpenShift's operator gives every operand container.
func CommonArgs() []string {
	return []string{"--logtostderr=true", "--v=3", "--leader-elect=true", "--leader-elect-lease-duration=120s", "--namespace=" + Namespace}
}

// FeatureGateArgs are CommonArgs and the feature gates, as OpenShift renders
// them for the machineset and machine controllers.
func FeatureGateArgs() []string {
	return append(CommonArgs(), "--feature-gates=MachineAPIMigration=false,VSphereMultiVCenterDay2=true,VSphereMultiVCenters=true")
}

// TLSArgs are what OpenShift's operator renders from the Intermediate profile.
func TLSArgs() []string {
	return []string{
		"--tls-cipher-suites=TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256," +
			"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," +
			"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384," +
			"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		"--tls-min-version=VersionTLS12",
	}
}

// UpstreamFlags are the flags OpenShift's binaries define beyond what its
// operator renders (upstream defaults, the caller's addresses).
func UpstreamFlags(healthAddr, metricsAddr string, webhooks bool) []string {
	args := []string{
		"--health-addr=" + healthAddr,
		"--metrics-bind-address=" + metricsAddr,
		"--leader-elect-resource-namespace=" + Namespace,
	}
	if webhooks {
		args = append(args, "--webhook-enabled=true", "--webhook-port=8443", "--webhook-cert-dir=/etc/machine-api-operator/tls")
	}
	return args
}

// Want is what a binary's options must hold after OpenShift's command line.
type Want struct {
	HealthAddr, MetricsAddr string
	FeatureGates, TLS       bool
}

// Check fails t when o is not what OpenShift's command line asked for.
func Check(t testing.TB, o operand.Options, w Want) {
	t.Helper()
	if !o.LeaderElect || o.LeaderElection.LeaseDuration != 120*time.Second {
		t.Errorf("leader election %v, lease %s; want on, 120s", o.LeaderElect, o.LeaderElection.LeaseDuration)
	}
	if o.Namespace != Namespace || o.LeaderElectionNamespace != Namespace {
		t.Errorf("namespace %q, lease namespace %q; want %q", o.Namespace, o.LeaderElectionNamespace, Namespace)
	}
	if o.HealthProbeBindAddress != w.HealthAddr || o.MetricsBindAddress != w.MetricsAddr {
		t.Errorf("health %q, metrics %q; want %q, %q", o.HealthProbeBindAddress, o.MetricsBindAddress, w.HealthAddr, w.MetricsAddr)
	}
	if w.FeatureGates {
		want := map[string]bool{"MachineAPIMigration": false, "VSphereMultiVCenterDay2": true, "VSphereMultiVCenters": true}
		if !maps.Equal(o.FeatureGates, want) {
			t.Errorf("feature gates %v, want %v", o.FeatureGates, want)
		}
	}
	if w.TLS {
		if o.TLS.MinVersion != "VersionTLS12" || len(o.TLS.CipherSuites) != 9 {
			t.Errorf("TLS %+v, want VersionTLS12 and 9 cipher suites", o.TLS)
		}
		if _, err := o.TLS.Apply(); err != nil {
			t.Error(err)
		}
	}
	if wh := o.Webhook; wh != nil && (!wh.Enabled || wh.Port != 8443 || wh.CertDir != "/etc/machine-api-operator/tls") {
		t.Errorf("webhook %+v, want enabled on 8443 with /etc/machine-api-operator/tls", *wh)
	}
}
