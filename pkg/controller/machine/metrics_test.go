package machine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// instanceFailures returns the mapi_instance_*_failed series of one Machine
// as reason → value.
func instanceFailures(t *testing.T, vec *prometheus.CounterVec, name, namespace string) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1000)
	vec.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		d := &dto.Metric{}
		if err := m.Write(d); err != nil {
			t.Fatal(err)
		}
		l := map[string]string{}
		for _, p := range d.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if len(l) != 3 {
			t.Fatalf("series with labels %v, want exactly name, namespace, reason", l)
		}
		if l["name"] == name && l["namespace"] == namespace {
			out[l["reason"]] = d.GetCounter().GetValue()
		}
	}
	return out
}

func wantFailures(t *testing.T, what string, vec *prometheus.CounterVec, m *machinev1beta1.Machine, want map[string]float64) {
	t.Helper()
	got := instanceFailures(t, vec, m.Name, m.Namespace)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s{name=%q,namespace=%q} by reason = %v, want %v", what, m.Name, m.Namespace, got, want)
	}
}

// TestInstanceCreateFailedCounted: each failed provider Create counts once
// in mapi_instance_create_failed of the Machine, with the error message as
// reason, or the provider.Error reason; a RequeueAfter is not a failure.
func TestInstanceCreateFailedCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.machine("create-fails")
	f.act.Set(func(a *fakeActuator) { a.CreateErr = errors.New("quota exceeded for instance type m5.large") })
	for range 2 {
		if _, err := f.reconcile(m); err == nil {
			t.Fatal("reconcile succeeded although Create failed")
		}
	}
	f.act.Set(func(a *fakeActuator) { a.CreateErr = provider.RequeueAfter(time.Second, "capacity pending") })
	f.mustReconcile(m)
	wantFailures(t, "mapi_instance_create_failed", InstanceCreateFailed, m, map[string]float64{"quota exceeded for instance type m5.large": 2})
	wantFailures(t, "mapi_instance_update_failed", InstanceUpdateFailed, m, map[string]float64{})

	// An invalid providerSpec: the Machine fails; reason is the provider.Error's.
	f.act.Set(func(a *fakeActuator) {
		a.CreateErr = fmt.Errorf("creating: %w", provider.InvalidConfiguration("spec.providerSpec.value.size: %q is not a known size", "huge"))
	})
	f.mustReconcile(m)
	wantPhase(t, f.mustGet(m), machinev1beta1.PhaseFailed)
	wantFailures(t, "mapi_instance_create_failed", InstanceCreateFailed, m, map[string]float64{
		"quota exceeded for instance type m5.large": 2,
		"InvalidConfiguration":                      1,
	})
	if c := f.act.Calls(opCreate); c != 4 {
		t.Errorf("%d Create calls, want 4", c)
	}
}

// TestInstanceUpdateAndDeleteFailedCounted: failed Update and Delete count in
// their counters; a long message is cut; the series go when the Machine is
// gone.
func TestInstanceUpdateAndDeleteFailedCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, _ := f.runningMachine("update-fails")
	long := "instance i-0123 rejected the update: " + fmt.Sprintf("%0200d", 7)
	f.act.Set(func(a *fakeActuator) { a.UpdateErr = errors.New(long) })
	if _, err := f.reconcile(m); err == nil {
		t.Fatal("reconcile succeeded although Update failed")
	}
	// Cut to maxReasonLength (128) bytes: the 37-byte prefix, 88 digits, "...".
	reason := "instance i-0123 rejected the update: " + strings.Repeat("0", 88) + "..."
	wantFailures(t, "mapi_instance_update_failed", InstanceUpdateFailed, m, map[string]float64{reason: 1})
	// A provider-side wait is not a failure.
	f.act.Set(func(a *fakeActuator) { a.UpdateErr = provider.RequeueAfter(time.Second, "refreshing") })
	f.mustReconcile(m)
	wantFailures(t, "mapi_instance_update_failed", InstanceUpdateFailed, m, map[string]float64{reason: 1})

	f.act.Set(func(a *fakeActuator) {
		a.UpdateErr = nil
		a.DeleteErr = &provider.Error{Reason: machinev1beta1.DeleteMachineError, Message: "the cloud refused to terminate i-0123"}
	})
	f.deleteMachine(m)
	if _, err := f.reconcile(m); err == nil {
		t.Fatal("reconcile succeeded although Delete failed")
	}
	wantFailures(t, "mapi_instance_delete_failed", InstanceDeleteFailed, m, map[string]float64{string(machinev1beta1.DeleteMachineError): 1})

	f.act.Set(func(a *fakeActuator) { a.DeleteErr = nil })
	f.mustReconcile(m)
	if f.get(m) != nil {
		t.Fatal("machine still exists after a successful delete")
	}
	// The next event of the gone Machine finds it NotFound: its series go.
	f.mustReconcile(m)
	for what, vec := range map[string]*prometheus.CounterVec{
		"mapi_instance_create_failed": InstanceCreateFailed,
		"mapi_instance_update_failed": InstanceUpdateFailed,
		"mapi_instance_delete_failed": InstanceDeleteFailed,
	} {
		wantFailures(t, what, vec, m, map[string]float64{})
	}
}

// TestInstanceFailedMetricsRegistered: the counters are in controller-runtime's
// registry (served on the metrics endpoint) under OpenShift's names.
func TestInstanceFailedMetricsRegistered(t *testing.T) {
	RegisterMetrics()
	for _, c := range []*prometheus.CounterVec{InstanceCreateFailed, InstanceUpdateFailed, InstanceDeleteFailed} {
		c.WithLabelValues("registered", "check", "x").Add(0)
		defer c.DeleteLabelValues("registered", "check", "x")
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range families {
		served[f.GetName()] = true
	}
	for _, name := range []string{"mapi_instance_create_failed", "mapi_instance_update_failed", "mapi_instance_delete_failed"} {
		if !served[name] {
			t.Errorf("%s is not served (registry has %d families)", name, len(families))
		}
	}
}
