package machinehealthcheck

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.New()).
		WithStatusSubresource(&machinev1beta1.MachineHealthCheck{}).
		WithIndex(&machinev1beta1.Machine{}, machinenode.NodeRefNameField, func(o client.Object) []string {
			if m := o.(*machinev1beta1.Machine); m.Status.NodeRef != nil {
				return []string{m.Status.NodeRef.Name}
			}
			return nil
		}).
		WithObjects(objs...).Build()
}

// TestReconcileShortCircuitRequeue (fake clock): while maxUnhealthy is
// exceeded the controller requeues at the next timer (a suspect Node's
// timeout), not in a tight loop; a second reconcile writes nothing and
// records no second event; when the timer fires the suspect Machine is
// counted unhealthy.
func TestReconcileShortCircuitRequeue(t *testing.T) {
	now := t0
	clk := clocktesting.NewFakePassiveClock(now)
	owner := metav1.OwnerReference{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "ms", UID: "u", Controller: ptr.To(true)}
	mk := func(name, node string, failed bool) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"a": "1"},
			OwnerReferences: []metav1.OwnerReference{owner}, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		if node != "" {
			m.Status.NodeRef = &corev1.ObjectReference{Name: node}
		}
		if failed {
			m.Status.Phase = ptr.To(machinev1beta1.PhaseFailed)
		}
		return m
	}
	suspect := testNode(cond(corev1.NodeReady, corev1.ConditionFalse, now.Add(-time.Minute)))
	suspect.Name = "suspect"
	mhc := &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mhc"},
		Spec: machinev1beta1.MachineHealthCheckSpec{
			Selector:            metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}},
			UnhealthyConditions: unhealthyConditions,
			MaxUnhealthy:        ptr.To(intstr.FromInt32(0)),
		},
	}
	c := fakeClient(mhc, suspect, mk("failed", "", true), mk("suspect", "suspect", false))
	rec := &recorder{}
	r := NewReconciler(Options{Client: c, APIReader: c, Recorder: rec, Clock: clk})
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "mhc"}}
	ctx := context.Background()

	res, err := r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 4*time.Minute {
		t.Errorf("RequeueAfter = %v, want 4m (the suspect Node's timeout)", res.RequeueAfter)
	}
	got := &machinev1beta1.MachineHealthCheck{}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if err := hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, machinev1beta1.TooManyUnhealthyReason)(got.Status); err != nil {
		t.Fatal(err)
	}
	if *got.Status.ExpectedMachines != 2 || *got.Status.CurrentHealthy != 0 || got.Status.RemediationsAllowed != 0 {
		t.Errorf("status %s", statusString(got.Status))
	}
	rv := got.ResourceVersion

	clk.SetTime(now.Add(time.Minute))
	res, err = r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 3*time.Minute {
		t.Errorf("second RequeueAfter = %v, want 3m", res.RequeueAfter)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != rv {
		t.Error("an unchanged status was written again")
	}
	if n := len(rec.find(EventRemediationRestricted, "mhc")); n != 1 {
		t.Errorf("%d RemediationRestricted events, want 1", n)
	}
	if n := len(rec.find(EventDetectedUnhealthy, "")); n != 2 {
		t.Errorf("%d DetectedUnhealthy events, want 2 (one per Machine): %v", n, rec.find(EventDetectedUnhealthy, ""))
	}

	// The suspect's timeout expires: two unhealthy, no timer left.
	clk.SetTime(now.Add(4 * time.Minute))
	res, err = r.Reconcile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v, want none (nothing changes by time alone)", res.RequeueAfter)
	}
	if err := c.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	cond := conditions.Get(got.Status.Conditions, machinev1beta1.RemediationAllowedCondition)
	if cond == nil || cond.Message != restrictedMessage(summary{Expected: 2, Unhealthy: 2}, mhc.Spec.MaxUnhealthy) {
		t.Errorf("condition %+v, want the new counts", cond)
	}
	if !cond.LastTransitionTime.Time.Equal(now) {
		t.Errorf("lastTransitionTime %v moved without a status change", cond.LastTransitionTime)
	}
	if n := len(rec.find(EventRemediationRestricted, "mhc")); n != 1 {
		t.Errorf("%d RemediationRestricted events, want 1", n)
	}
	if n := len(rec.find(EventMachineDeleted, "")); n != 0 {
		t.Errorf("%d deletions while short-circuited", n)
	}
}

// TestRequestMapping: Machine and Node events map to the
// MachineHealthChecks whose selector matches (an empty selector matches
// all), through the nodeRef index and the Node's machine annotation.
func TestRequestMapping(t *testing.T) {
	mhcFor := func(name string, sel map[string]string) *machinev1beta1.MachineHealthCheck {
		return &machinev1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: machinev1beta1.MachineHealthCheckSpec{Selector: metav1.LabelSelector{MatchLabels: sel}}}
	}
	m1 := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m1", Labels: map[string]string{"a": "1"}}}
	m1.Status.NodeRef = &corev1.ObjectReference{Name: "n1"}
	m2 := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m2", Labels: map[string]string{"b": "2"}}}
	c := fakeClient(mhcFor("a", map[string]string{"a": "1"}), mhcFor("b", map[string]string{"b": "2"}), mhcFor("all", nil),
		mhcFor("none", map[string]string{"c": "3"}), m1, m2,
		&machinev1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere"}})
	r := NewReconciler(Options{Client: c})
	ctx := context.Background()
	names := func(keys []types.NamespacedName) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.Name)
		}
		slices.Sort(out)
		return out
	}
	reqNames := func(reqs []ctrl.Request) []string {
		var keys []types.NamespacedName
		for _, r := range reqs {
			keys = append(keys, r.NamespacedName)
		}
		return names(keys)
	}
	if got := reqNames(r.mhcsSelecting(ctx, m1)); !slices.Equal(got, []string{"a", "all"}) {
		t.Errorf("MHCs for m1 = %v", got)
	}
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if got := reqNames(r.nodeToMHCs(ctx, n1)); !slices.Equal(got, []string{"a", "all"}) {
		t.Errorf("MHCs for n1 (nodeRef) = %v", got)
	}
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Annotations: map[string]string{machinenode.MachineAnnotation: "ns/m2"}}}
	if got := reqNames(r.nodeToMHCs(ctx, n2)); !slices.Equal(got, []string{"all", "b"}) {
		t.Errorf("MHCs for n2 (annotation) = %v", got)
	}
	bad := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", Annotations: map[string]string{machinenode.MachineAnnotation: "garbage"}}}
	if got := r.nodeToMHCs(ctx, bad); len(got) != 0 {
		t.Errorf("MHCs for a Node with a bad annotation = %v", got)
	}
}

// TestReconcileWithoutPacing (fake clock): with the default Options (no
// rate limit, no backoff, as OpenShift) every unhealthy Machine goes in one
// pass, and a failing replacement goes at once too.
func TestReconcileWithoutPacing(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0)
	mhc := &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nopacing"},
		Spec:       machinev1beta1.MachineHealthCheckSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}}},
	}
	failedMachine := func(name string) *machinev1beta1.Machine {
		return &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{"a": "1"}, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: "ms",
				UID: "ms", Controller: ptr.To(true)}}},
			Status: machinev1beta1.MachineStatus{Phase: ptr.To(machinev1beta1.PhaseFailed)}}
	}
	objs := []client.Object{mhc}
	for i := range 12 {
		objs = append(objs, failedMachine(fmt.Sprintf("m%d", i)))
	}
	c := fakeClient(objs...)
	r := NewReconciler(Options{Client: c, APIReader: c, Recorder: &recorder{}, Clock: clk})
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "nopacing"}}
	ctx := context.Background()
	count := func() int {
		list := &machinev1beta1.MachineList{}
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	for _, step := range []string{"12 at once", "a failing replacement at once"} {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 0 || res.RequeueAfter != 0 {
			t.Errorf("%s: %d Machines left, requeue %v; want 0, 0", step, n, res.RequeueAfter)
		}
		if err := c.Create(ctx, failedMachine("r1")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReconcilePacingRequeue (fake clock): the requeue is exactly when the
// next token comes, or when a backoff ends, and never sooner.
func TestReconcilePacingRequeue(t *testing.T) {
	now := t0
	clk := clocktesting.NewFakePassiveClock(now)
	mk := func(name, owner string, created time.Time) *machinev1beta1.Machine {
		return &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{"a": "1"}, CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineSet", Name: owner,
				UID: types.UID(owner), Controller: ptr.To(true)}}},
			Status: machinev1beta1.MachineStatus{Phase: ptr.To(machinev1beta1.PhaseFailed)}}
	}
	mhc := &machinev1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pacing"},
		Spec:       machinev1beta1.MachineHealthCheckSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}}},
	}
	objs := []client.Object{mhc}
	for i := range 5 {
		objs = append(objs, mk(fmt.Sprintf("m%d", i+1), "ms", now.Add(-time.Hour+time.Duration(i)*time.Second)))
	}
	c := fakeClient(objs...)
	rec := &recorder{}
	r := NewReconciler(Options{Client: c, APIReader: c, Recorder: rec, Clock: clk, RemediationBurst: 2, RemediationInterval: time.Minute, RemediationBackoff: true})
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "pacing"}}
	ctx := context.Background()
	left := func() []string {
		list := &machinev1beta1.MachineList{}
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range list.Items {
			out = append(out, m.Name)
		}
		slices.Sort(out)
		return out
	}
	pass := func(at time.Duration, wantRequeue time.Duration, wantLeft ...string) {
		t.Helper()
		clk.SetTime(now.Add(at))
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != wantRequeue {
			t.Errorf("at %s: RequeueAfter = %v, want %v", at, res.RequeueAfter, wantRequeue)
		}
		if got := left(); !slices.Equal(got, wantLeft) {
			t.Errorf("at %s: left %v, want %v", at, got, wantLeft)
		}
	}
	pass(0, time.Minute, "m3", "m4", "m5")                 // the burst: the two oldest
	pass(20*time.Second, 40*time.Second, "m3", "m4", "m5") // no token yet
	pass(time.Minute, time.Minute, "m4", "m5")             // one token
	pass(3*time.Minute, 0, []string{}...)                  // two tokens, nothing waits
	if n := len(rec.find(EventRemediationRateLimited, "pacing")); n != 1 {
		t.Errorf("%d RemediationRateLimited events, want 1", n)
	}

	// A replacement of the MachineSet's fails too: the backoff (1m from
	// when it is due) holds it, the rate limit does not (the bucket has
	// refilled by then).
	if err := c.Create(ctx, mk("r1", "ms", now.Add(3*time.Minute))); err != nil {
		t.Fatal(err)
	}
	pass(3*time.Minute+10*time.Second, time.Minute, "r1")
	pass(3*time.Minute+40*time.Second, 30*time.Second, "r1")
	pass(4*time.Minute+10*time.Second, 0, []string{}...)
	if ev := rec.find(EventRemediationBackoff, "r1"); len(ev) != 1 {
		t.Errorf("RemediationBackoff events %v, want 1", ev)
	}
	// Nothing waits any more: after the reset window the state is gone.
	pass(4*time.Minute+10*time.Second+RemediationBackoffReset, 0, []string{}...)
	n := 0
	r.pacing.Range(func(_, _ any) bool { n++; return true })
	if n != 0 {
		t.Errorf("pacing state of %d MachineHealthChecks left", n)
	}
}
