package machine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// A new Machine gets its finalizer, then Create, then its providerID in one
// pass, whose status waits for nodelink's nodeRef (a requeue after the wait
// backoff); with no nodeRef by then, one status write (Provisioned, with
// addresses and InstanceExists=True: the Create reported the instance); a
// further pass writes nothing; once nodelink sets the nodeRef, one status
// write makes it Running; a steady state writes nothing. The writes are
// counted: finalizer PATCH, providerID PATCH, status (Provisioned), then
// status (Running), 4 in all, and no GET of the Machine before Create (Create
// finds an instance it made before). Breaks if: create() persisted
// Provisioning before Create again (3 writes in pass 1), or read the Machine
// uncached before Create (a GET in pass 1), or the pass after the wait wrote
// no status.
func TestProvisioningToRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	createsBefore := metricValue(t, ProviderCallsTotal.WithLabelValues(OperationCreate))
	var phaseAtCreate string
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/m1"
		a.Addresses = []string{"10.0.0.7"}
		a.CreateHook = func(ctx context.Context, m *machinev1beta1.Machine) error {
			live := &machinev1beta1.Machine{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(m), live); err != nil {
				return err
			}
			phaseAtCreate = phaseOf(live)
			return nil
		}
	})
	m := f.machine("m1")

	// Pass 1: finalizer, Create, providerID; the status waits.
	f.counter.Reset()
	if res := f.mustReconcile(m); res.RequeueAfter == 0 {
		t.Errorf("no requeue after Create: should nodelink never link, nothing would write the status: %+v", res)
	}
	if w := f.counter.Writes(); w != 2 {
		t.Errorf("pass 1 wrote %d times, want 2 (finalizer, providerID): %v", w, f.counter.WriteRequests())
	}
	if g := machineGets(f, "m1"); g != 1 {
		t.Errorf("pass 1 read %d times, want 1 (the Machine itself; none before Create): %v", g, f.counter.Snapshot())
	}
	wantCalls(t, f.act, map[string]int{opExists: 1, opCreate: 1})
	if phaseAtCreate != "" {
		t.Errorf("phase when Create ran = %q, want none written yet (one status write per pass)", phaseAtCreate)
	}
	wantPhase(t, f.mustGet(m), "")

	// The wait is over, no nodeRef: one status write, Provisioned.
	f.counter.Reset()
	if res := f.mustReconcile(m); res.RequeueAfter != 0 {
		t.Errorf("Provisioned needs no requeue (nodelink's nodeRef wakes us): %+v", res)
	}
	if w := f.counter.Writes(); w != 1 {
		t.Errorf("the pass after the wait wrote %d times, want 1 (status): %v", w, f.counter.WriteRequests())
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseProvisioned)
	if !hasFinalizer(got) {
		t.Error("finalizer not added")
	}
	if got.Spec.ProviderID == nil || *got.Spec.ProviderID != "test://"+f.ns+"/m1" {
		t.Errorf("providerID not persisted: %v", got.Spec.ProviderID)
	}
	if len(got.Status.Addresses) != 1 || got.Status.Addresses[0].Address != "10.0.0.7" {
		t.Errorf("addresses not persisted: %+v", got.Status.Addresses)
	}
	wantCondition(t, got, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)
	wantCondition(t, got, DrainableCondition, corev1.ConditionTrue, ReasonNoHooks)
	wantCondition(t, got, TerminableCondition, corev1.ConditionTrue, ReasonNoHooks)
	if got.Status.LastUpdated == nil {
		t.Error("lastUpdated not set")
	}
	if f.rec.count(EventCreated) != 1 {
		t.Errorf("events:\n%s", f.rec)
	}
	if d := metricValue(t, ProviderCallsTotal.WithLabelValues(OperationCreate)) - createsBefore; d < 1 {
		t.Errorf("machine_api_provider_calls_total{operation=create} grew by %v", d)
	}

	// Pass 2: the instance exists → Update, nothing new to write.
	f.counter.Reset()
	if res := f.mustReconcile(m); res.RequeueAfter != 0 {
		t.Errorf("Provisioned needs no requeue (nodelink's nodeRef wakes us): %+v", res)
	}
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("pass 2 wrote %d times, want 0: %v", w, f.counter.WriteRequests())
	}
	wantCalls(t, f.act, map[string]int{opExists: 3, opCreate: 1, opUpdate: 2})
	got = f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseProvisioned)

	// nodelink sets the nodeRef → Running; the nodeRef is never overwritten.
	got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: "node-m1"}
	if err := env.Client.Status().Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 1 {
		t.Errorf("Running took %d writes, want 1 (status): %v", w, f.counter.WriteRequests())
	}
	got = f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseRunning)
	if got.Status.NodeRef == nil || got.Status.NodeRef.Name != "node-m1" {
		t.Errorf("nodeRef lost: %+v", got.Status.NodeRef)
	}

	// Steady state: no writes, lastUpdated and resourceVersion unchanged.
	f.counter.Reset()
	for range 3 {
		if res := f.mustReconcile(m); res.RequeueAfter != 0 {
			t.Errorf("Running must not requeue: %+v", res)
		}
	}
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("steady state wrote %d times: %v", w, f.counter.WriteRequests())
	}
	again := f.mustGet(m)
	if again.ResourceVersion != got.ResourceVersion || !again.Status.LastUpdated.Equal(got.Status.LastUpdated) {
		t.Errorf("steady state changed the Machine: rv %s→%s lastUpdated %v→%v", got.ResourceVersion, again.ResourceVersion, got.Status.LastUpdated, again.Status.LastUpdated)
	}
}

// machineGets counts the GETs of the Machine name (discovery aside).
func machineGets(f *fixture, name string) int {
	n := 0
	for r, k := range f.counter.Snapshot() {
		if r.Verb == "GET" && strings.HasSuffix(r.Path, "/machines/"+name) {
			n += k
		}
	}
	return n
}

func hasFinalizer(m *machinev1beta1.Machine) bool {
	for _, f := range m.Finalizers {
		if f == machinev1beta1.MachineFinalizer {
			return true
		}
	}
	return false
}

// A provisioned instance that disappeared makes the Machine Failed
// (InstanceMissing); it is never re-created and not reconciled again.
func TestInstanceDisappeared(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.machine("gone", func(m *machinev1beta1.Machine) {
		m.Finalizers = []string{machinev1beta1.MachineFinalizer}
		m.Spec.ProviderID = ptr.To("test://gone")
		m.Status.Phase = ptr.To(machinev1beta1.PhaseRunning)
		m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}}
		m.Status.ProviderStatus = rawJSON(`{"instanceState":"running"}`)
	})
	f.mustReconcile(m)
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseFailed)
	c := wantCondition(t, got, InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceMissing)
	if c.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("severity = %q", c.Severity)
	}
	if got.Status.ErrorMessage == nil || *got.Status.ErrorMessage == "" {
		t.Error("errorMessage not set")
	}
	if got.Annotations[provider.InstanceStateAnnotation] != "Unknown" {
		t.Errorf("instance-state annotation = %q", got.Annotations[provider.InstanceStateAnnotation])
	}
	if string(got.Status.ProviderStatus.Raw) != `{"instanceState":"Unknown"}` {
		t.Errorf("providerStatus = %s", got.Status.ProviderStatus.Raw)
	}
	wantCalls(t, f.act, map[string]int{opExists: 1})

	f.counter.Reset()
	f.mustReconcile(m)
	wantCalls(t, f.act, map[string]int{opExists: 1})
	if w := f.counter.Writes(); w != 0 {
		t.Errorf("Failed Machine written again: %v", f.counter.WriteRequests())
	}
}

// InvalidConfiguration from Create → Failed with errorReason/errorMessage,
// no retry; a Machine without providerSpec.value fails the same way without
// calling Create.
func TestInvalidConfiguration(t *testing.T) {
	t.Parallel()
	t.Run("from Create", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.act.Set(func(a *fakeActuator) {
			a.CreateErr = fmt.Errorf("creating: %w", provider.InvalidConfiguration("spec.providerSpec.value.size: %q is not a known size", "huge"))
		})
		m := f.machine("bad")
		if res := f.mustReconcile(m); res.RequeueAfter != 0 {
			t.Errorf("no retry expected: %+v", res)
		}
		got := f.mustGet(m)
		wantPhase(t, got, machinev1beta1.PhaseFailed)
		if got.Status.ErrorReason == nil || *got.Status.ErrorReason != machinev1beta1.InvalidConfigurationMachineError {
			t.Errorf("errorReason = %v", got.Status.ErrorReason)
		}
		if got.Status.ErrorMessage == nil || *got.Status.ErrorMessage != `spec.providerSpec.value.size: "huge" is not a known size` {
			t.Errorf("errorMessage = %v", ptr.Deref(got.Status.ErrorMessage, "<nil>"))
		}
		if f.rec.count(EventFailedCreate) != 1 {
			t.Errorf("events:\n%s", f.rec)
		}
		f.mustReconcile(m)
		wantCalls(t, f.act, map[string]int{opExists: 1, opCreate: 1})
	})
	t.Run("missing providerSpec.value", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		m := f.machine("empty", func(m *machinev1beta1.Machine) { m.Spec.ProviderSpec.Value = nil })
		f.mustReconcile(m)
		got := f.mustGet(m)
		wantPhase(t, got, machinev1beta1.PhaseFailed)
		if got.Status.ErrorReason == nil || *got.Status.ErrorReason != machinev1beta1.InvalidConfigurationMachineError ||
			got.Status.ErrorMessage == nil || *got.Status.ErrorMessage == "" {
			t.Errorf("error = %v / %v", got.Status.ErrorReason, got.Status.ErrorMessage)
		}
		wantCalls(t, f.act, map[string]int{opExists: 1})
	})
}

// An Exists error leaves InstanceExists=Unknown (persisted) and is retried
// with backoff; the next successful pass continues.
func TestExistsErrorRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.act.Set(func(a *fakeActuator) { a.ExistsErr = errors.New("cloud API unavailable") })
	m := f.machine("flaky")
	if _, err := f.reconcile(m); err == nil {
		t.Fatal("an Exists error must be returned for backoff")
	}
	got := f.mustGet(m)
	wantCondition(t, got, InstanceExistsCondition, corev1.ConditionUnknown, ReasonErrorCheckingProvider, "cloud API unavailable")
	if got.Status.ErrorMessage != nil || phaseOf(got) != "" {
		t.Errorf("a transient error must not set errorMessage or a phase: %+v", got.Status)
	}
	wantCalls(t, f.act, map[string]int{opExists: 1})

	f.act.Set(func(a *fakeActuator) { a.ExistsErr = nil })
	if res := f.mustReconcile(m); res.RequeueAfter <= 0 {
		t.Errorf("Create set no providerID: the controller must come back to look at the instance: %+v", res)
	}
	wantCalls(t, f.act, map[string]int{opExists: 2, opCreate: 1})
	wantPhase(t, f.mustGet(m), machinev1beta1.PhaseProvisioning)
}

// A provider.RequeueAfterError (wrapped or not) is honoured and is not an error; other
// Create errors are returned (backoff), recorded once and shown on the
// InstanceExists condition.
func TestProviderRequeueAfterAndErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.act.Set(func(a *fakeActuator) { a.ExistsErr = provider.RequeueAfter(5*time.Second, "provider API throttled") })
	m := f.machine("slow")
	res, err := f.reconcile(m)
	if err != nil || res.RequeueAfter != 5*time.Second {
		t.Fatalf("Exists: got (%+v, %v), want requeue after 5s", res, err)
	}
	if c := conditions.Get(f.mustGet(m).Status.Conditions, InstanceExistsCondition); c != nil {
		t.Errorf("a provider-side wait is not a failed check: %+v", c)
	}

	f.act.Set(func(a *fakeActuator) {
		a.ExistsErr = nil
		a.CreateErr = fmt.Errorf("provider: %w", provider.RequeueAfter(7*time.Second, "waiting for quota"))
	})
	res, err = f.reconcile(m)
	if err != nil || res.RequeueAfter != 7*time.Second {
		t.Fatalf("got (%+v, %v), want requeue after 7s", res, err)
	}
	wantCondition(t, f.mustGet(m), InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated, "waiting for quota")

	f.act.Set(func(a *fakeActuator) { a.CreateErr = errors.New("quota exceeded") })
	for range 2 {
		if _, err := f.reconcile(m); err == nil {
			t.Fatal("Create error must be returned")
		}
	}
	wantCondition(t, f.mustGet(m), InstanceExistsCondition, corev1.ConditionFalse, ReasonInstanceNotCreated, "last create attempt failed: quota exceeded")
	if n := f.rec.count(EventFailedCreate); n != 1 {
		t.Errorf("FailedCreate recorded %d times, want once:\n%s", n, f.rec)
	}

	// Update errors: requeue-after honoured too.
	f.act.Set(func(a *fakeActuator) {
		a.CreateErr = nil
		a.ExistsValue = true
		a.UpdateErr = provider.RequeueAfter(3*time.Second, "instance booting")
	})
	res, err = f.reconcile(m)
	if err != nil || res.RequeueAfter != 3*time.Second {
		t.Fatalf("Update: got (%+v, %v), want requeue after 3s", res, err)
	}
	wantCondition(t, f.mustGet(m), InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)

	// A provider that always asks to be called again (health checks) still
	// lets the phase advance once the instance is provisioned.
	f.act.Set(func(a *fakeActuator) {
		a.UpdateHook = func(_ context.Context, m *machinev1beta1.Machine) error {
			m.Spec.ProviderID = ptr.To("fake://" + m.Name)
			m.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.9"}}
			return nil
		}
	})
	res, err = f.reconcile(m)
	if err != nil || res.RequeueAfter != 3*time.Second {
		t.Fatalf("Update: got (%+v, %v), want requeue after 3s", res, err)
	}
	if got := f.mustGet(m); got.Status.Phase == nil || *got.Status.Phase != machinev1beta1.PhaseProvisioned {
		t.Fatalf("phase = %v after a provisioned Update asking to requeue, want Provisioned", got.Status.Phase)
	}
}

// InvalidConfiguration from Update (providerSpec made invalid after the
// instance was created): the Machine keeps its phase and is not Failed;
// ProviderUpdated=False/InvalidConfiguration shows the provider's message,
// and there is no error (no backoff) and no requeue: a Machine change wakes
// the controller. Once Update succeeds again ProviderUpdated turns True.
func TestInvalidConfigurationFromUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m, _ := f.runningMachine("edited")
	f.act.Set(func(a *fakeActuator) {
		a.UpdateErr = fmt.Errorf("updating: %w", provider.InvalidConfiguration("spec.providerSpec.value.size: %q is not a known size", "huge"))
	})
	for range 2 {
		res, err := f.reconcile(m)
		if err != nil || res != (ctrl.Result{}) {
			t.Fatalf("got (%+v, %v), want no error and no requeue", res, err)
		}
	}
	got := f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseRunning)
	c := wantCondition(t, got, ProviderUpdatedCondition, corev1.ConditionFalse, ReasonInvalidConfiguration)
	if c.Message != `spec.providerSpec.value.size: "huge" is not a known size` || c.Severity != machinev1beta1.ConditionSeverityWarning {
		t.Errorf("condition = %+v", c)
	}
	wantCondition(t, got, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)
	if got.Status.ErrorReason != nil || got.Status.ErrorMessage != nil {
		t.Errorf("errorReason/errorMessage are for Failed only: %v / %v", got.Status.ErrorReason, got.Status.ErrorMessage)
	}
	if n := f.rec.count(EventFailedUpdate); n != 1 {
		t.Errorf("FailedUpdate recorded %d times, want once:\n%s", n, f.rec)
	}

	f.act.Set(func(a *fakeActuator) { a.UpdateErr = nil })
	f.mustReconcile(m)
	wantCondition(t, f.mustGet(m), ProviderUpdatedCondition, corev1.ConditionTrue, ReasonProviderUpdated)
}

// nodeRef has one writer, nodelink (docs/architecture.md): a provider that registers the Node in Create
// (kubemark's) gets two writes in that pass (finalizer, providerID) and no status write: the status waits
// for nodelink's nodeRef, then one write makes the Machine Running (Provisioned and Running at once); the
// machine controller never writes the nodeRef. Breaks if: the machine controller linked the Node itself (a
// second nodeRef writer), or wrote Provisioned in the pass of Create (two status writes where one does).
func TestCreateLeavesTheNodeRefToNodelink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	providerID := "test://" + f.ns + "/m1"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-m1"}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = providerID
		a.Addresses = []string{"10.0.0.8"}
		a.CreateHook = func(ctx context.Context, _ *machinev1beta1.Machine) error { return env.Client.Create(ctx, node) }
	})
	m := f.machine("m1")

	f.counter.Reset()
	if res := f.mustReconcile(m); res.RequeueAfter == 0 {
		t.Error("no requeue: should nodelink never link, nothing would write the status")
	}
	if w := f.counter.Writes(); w != 2 {
		t.Errorf("wrote %d times, want 2 (finalizer, providerID): %v", w, f.counter.WriteRequests())
	}
	got := f.mustGet(m)
	wantPhase(t, got, "")
	if got.Status.NodeRef != nil {
		t.Errorf("nodeRef = %+v, want none: nodelink alone writes it", got.Status.NodeRef)
	}
	if got.Spec.ProviderID == nil || *got.Spec.ProviderID != providerID {
		t.Errorf("providerID not persisted: %v", got.Spec.ProviderID)
	}

	// nodelink links: one status write, Running with the addresses and conditions.
	got.Status.NodeRef = &corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
	if err := env.Client.Status().Update(f.ctx, got); err != nil {
		t.Fatal(err)
	}
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 1 {
		t.Errorf("wrote %d times, want 1 (status): %v", w, f.counter.WriteRequests())
	}
	got = f.mustGet(m)
	wantPhase(t, got, machinev1beta1.PhaseRunning)
	wantCondition(t, got, InstanceExistsCondition, corev1.ConditionTrue, ReasonInstanceExists)
	if len(got.Status.Addresses) != 1 {
		t.Errorf("addresses %+v, want the provider's", got.Status.Addresses)
	}
}

// A Machine created with the finalizer (the defaulting webhook adds it) needs one write in the pass of
// Create (providerID; the status waits for the nodeRef), and no read before Create. Breaks if reconcile
// patched a finalizer already there, or create() read the Machine uncached first.
func TestCreatedWithFinalizer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.act.Set(func(a *fakeActuator) {
		a.CreateSetsInstance = true
		a.ProviderID = "test://" + f.ns + "/m1"
	})
	m := f.machine("m1", func(m *machinev1beta1.Machine) { m.Finalizers = []string{machinev1beta1.MachineFinalizer} })
	f.counter.Reset()
	f.mustReconcile(m)
	if w := f.counter.Writes(); w != 1 {
		t.Errorf("wrote %d times, want 1 (providerID; the status waits for the nodeRef): %v", w, f.counter.WriteRequests())
	}
	if g := machineGets(f, "m1"); g != 1 {
		t.Errorf("read the Machine %d times, want 1 (the reconcile's own read): %v", g, f.counter.Snapshot())
	}
	wantCalls(t, f.act, map[string]int{opExists: 1, opCreate: 1})
	got := f.mustGet(m)
	wantPhase(t, got, "")
	if !slices.Equal(got.Finalizers, []string{machinev1beta1.MachineFinalizer}) {
		t.Errorf("finalizers = %v, want ours once", got.Finalizers)
	}
}

// A terminal failure (an error returned with the Machine marked Failed, OpenShift's contract) from Exists
// or Update fails the Machine with errorReason/errorMessage from the error, whatever the error, even for
// a provisioned Machine, and nothing is retried. Breaks if: the controller ignores the phase the provider
// set on its Machine (Exists gets a copy), or keeps treating such an Update error as a retry.
func TestTerminalFailureFromExistsAndUpdate(t *testing.T) {
	t.Parallel()
	vmGone := &provider.Error{Reason: machinev1beta1.UpdateMachineError, Message: "the VM's template was deleted: it cannot be repaired"}
	t.Run("from Exists, a provider.Error", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.act.Set(func(a *fakeActuator) {
			a.ExistsHook = func(_ context.Context, m *machinev1beta1.Machine) (bool, error) {
				return false, provider.Failed(m, fmt.Errorf("looking up the VM: %w", vmGone))
			}
		})
		m := f.machine("unrepairable")
		res, err := f.reconcile(m)
		if err != nil || res != (ctrl.Result{}) {
			t.Fatalf("got (%+v, %v), want no error and no requeue", res, err)
		}
		got := f.mustGet(m)
		wantPhase(t, got, machinev1beta1.PhaseFailed)
		if ptr.Deref(got.Status.ErrorReason, "") != machinev1beta1.UpdateMachineError || ptr.Deref(got.Status.ErrorMessage, "") != vmGone.Message {
			t.Errorf("errorReason/errorMessage = %v / %v, want %s / %q", ptr.Deref(got.Status.ErrorReason, ""), ptr.Deref(got.Status.ErrorMessage, ""), vmGone.Reason, vmGone.Message)
		}
		wantCondition(t, got, InstanceExistsCondition, corev1.ConditionUnknown, ReasonErrorCheckingProvider, "the VM's template was deleted")
		f.mustReconcile(m)
		wantCalls(t, f.act, map[string]int{opExists: 1})
	})
	t.Run("from Update of a Running Machine, a plain error", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		m, _ := f.runningMachine("broken")
		f.act.Reset()
		f.act.Set(func(a *fakeActuator) {
			a.UpdateHook = func(_ context.Context, m *machinev1beta1.Machine) error {
				return provider.Failed(m, errors.New("the instance was replaced by the provider"))
			}
		})
		res, err := f.reconcile(m)
		if err != nil || res != (ctrl.Result{}) {
			t.Fatalf("got (%+v, %v), want no error and no requeue", res, err)
		}
		got := f.mustGet(m)
		wantPhase(t, got, machinev1beta1.PhaseFailed)
		if got.Status.ErrorReason != nil || ptr.Deref(got.Status.ErrorMessage, "") != "the instance was replaced by the provider" {
			t.Errorf("errorReason/errorMessage = %v / %v, want none / the error", got.Status.ErrorReason, ptr.Deref(got.Status.ErrorMessage, "<nil>"))
		}
		if got.Annotations[provider.InstanceStateAnnotation] != "Unknown" {
			t.Errorf("instance-state annotation = %q, want Unknown", got.Annotations[provider.InstanceStateAnnotation])
		}
		f.mustReconcile(m)
		wantCalls(t, f.act, map[string]int{opExists: 1, opUpdate: 1})
	})
}
