package vsphere

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

// Update attaches the installer's cluster ID tag and the providerSpec's
// tagIDs to the VM.
func TestUpdateAttachesTags(t *testing.T) {
	e := newSimEnv(t)
	rc := rest.NewClient(e.Client.Client)
	if err := rc.Login(e.ctx, url.UserPassword(vspheretest.Username, vspheretest.Password)); err != nil {
		t.Fatal(err)
	}
	tm := tags.NewManager(rc)
	tag := func(category, name string) string {
		t.Helper()
		cat, err := tm.CreateCategory(e.ctx, &tags.Category{Name: category, Cardinality: "MULTIPLE", AssociableTypes: []string{"VirtualMachine"}})
		if err != nil {
			t.Fatal(err)
		}
		id, err := tm.CreateTag(e.ctx, &tags.Tag{Name: name, CategoryID: cat})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	clusterTag := tag("openshift-test-abc12", "test-abc12")
	extra := tag("team", "storage")

	m := e.newMachine("worker-0", func(s *machinev1beta1.VSphereMachineProviderSpec) { s.TagIDs = []string{extra} })
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatalf("Update: %v", err)
	}
	attached, err := tm.ListAttachedTags(e.ctx, e.vm("worker-0").Reference())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{clusterTag, extra} {
		if !slices.Contains(attached, want) {
			t.Errorf("tag %s not attached; attached: %v", want, attached)
		}
	}
}

// Machines on one vCenter share a login, and an expired session is replaced.
func TestSessionCachedPerServer(t *testing.T) {
	e := newSimEnv(t)
	a, b := e.newMachine("worker-a", nil), e.newMachine("worker-b", nil)
	for _, m := range []*machinev1beta1.Machine{a, b} {
		if _, err := e.a.Exists(e.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.a.sessions.byKey); n != 1 {
		t.Fatalf("%d cached sessions for one vCenter, user and datacenter, want 1", n)
	}
	var cached *cachedSession
	for _, c := range e.a.sessions.byKey {
		cached = c
	}
	us, err := cached.client.SessionManager.UserSession(e.ctx)
	if err != nil || us == nil {
		t.Fatalf("user session: %v, %v", us, err)
	}
	if err := e.Client.SessionManager.TerminateSession(e.ctx, []string{us.Key}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Exists(e.ctx, a); err != nil {
		t.Fatalf("Exists after the session expired: %v, want a new login", err)
	}
}

// Machines created at once share one session: their lookups (the template, by a path relative to the
// datacenter) must not race on it; the race detector fails this test when the session's Finder fills its
// datacenter-folders cache on first use.
func TestSessionSharedByConcurrentCalls(t *testing.T) {
	e := newSimEnv(t)
	var ms []*machinev1beta1.Machine
	for i := range 8 {
		ms = append(ms, e.newMachine(fmt.Sprintf("worker-%d", i), nil))
	}
	errs := make(chan error, len(ms))
	for _, m := range ms {
		go func() {
			errs <- e.a.Create(e.ctx, m)
		}()
	}
	for range ms {
		if err := <-errs; err != nil && !requeued(err) {
			t.Error(err)
		}
	}
	for _, m := range ms {
		if err := e.until(m, e.a.Create, true); err != nil {
			t.Fatal(err)
		}
		if n := e.vmsNamed(m.Name); n != 1 {
			t.Errorf("%d VMs named %s, want 1", n, m.Name)
		}
	}
}

// Reconciles of several Machines on one vCenter log in once, SOAP and REST (OpenShift's session cache); a SOAP
// session vCenter terminated is replaced by one new SOAP and REST login each, the replaced REST login logged out;
// a REST login vCenter dropped is replaced alone; another password in the credentials Secret logs in again.
// Breaks if: sessions.get logs in per call, rest() logs in per call, or a replaced session's REST login is
// left on vCenter.
func TestSessionLoginsPerVCenter(t *testing.T) {
	e := newSimEnv(t)
	reg := prometheus.NewRegistry()
	if err := e.a.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	var ms []*machinev1beta1.Machine
	for i := range 3 {
		m := e.newMachine(fmt.Sprintf("worker-%d", i), nil)
		if err := e.until(m, e.a.Create, true); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	reconcile := func(rounds int) {
		t.Helper()
		for range rounds {
			for _, m := range ms {
				if _, err := e.a.Exists(e.ctx, m); err != nil {
					t.Fatal(err)
				}
				if err := call(m, e.a.Update, true); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	soapLogins := func() uint64 { return requestCounts(t, reg)["soap Login success"] }
	reconcile(10)
	if n := len(e.a.sessions.byKey); n != 1 {
		t.Fatalf("%d cached sessions, want 1", n)
	}
	var cached *cachedSession
	for _, c := range e.a.sessions.byKey {
		cached = c
	}
	restID := func() string {
		t.Helper()
		cached.restSession.mu.Lock()
		defer cached.restSession.mu.Unlock()
		if cached.restSession.client == nil {
			t.Fatal("no REST login after Update")
		}
		return cached.restSession.client.SessionID()
	}
	// restAlive asks vCenter whether it still knows a REST login.
	restAlive := func(id string) bool {
		t.Helper()
		rc := rest.NewClient(e.Client.Client)
		rc.SessionID(id)
		us, err := rc.Session(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return us != nil
	}
	rest1 := restID()
	if n := soapLogins(); n != 1 {
		t.Errorf("%d SOAP logins for 3 Creates and 30 Exists and Updates, want 1", n)
	}
	reconcile(1)
	if id := restID(); id != rest1 {
		t.Errorf("the REST login changed (%s → %s) while vCenter kept it", rest1, id)
	}

	// vCenter ends the SOAP session (an administrator, or its idle timeout).
	us, err := cached.client.SessionManager.UserSession(e.ctx)
	if err != nil || us == nil {
		t.Fatalf("user session: %v, %v", us, err)
	}
	if err := e.Client.SessionManager.TerminateSession(e.ctx, []string{us.Key}); err != nil {
		t.Fatal(err)
	}
	reconcile(3)
	rest2 := restID()
	if n := soapLogins(); n != 2 {
		t.Errorf("%d SOAP logins after vCenter ended the session, want 2", n)
	}
	if rest2 == rest1 {
		t.Error("the REST login of the replaced session is still used")
	}
	if restAlive(rest1) {
		t.Error("the replaced session's REST login is still on vCenter: it was not logged out")
	}

	// vCenter drops the REST login alone (its REST idle timeout): only that is replaced.
	cached.restSession.mu.Lock()
	if err := cached.restSession.client.Logout(e.ctx); err != nil {
		t.Fatal(err)
	}
	cached.restSession.mu.Unlock()
	reconcile(2)
	if rest3 := restID(); rest3 == rest2 || !restAlive(rest3) {
		t.Errorf("REST login after vCenter dropped it: %s (before %s), want a new live one", rest3, rest2)
	}
	if n := soapLogins(); n != 2 {
		t.Errorf("%d SOAP logins after a REST login was dropped, want still 2", n)
	}

	// Another password in the Secret: a new login with it (vcsim refuses this one), not the cached session.
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: testNamespace, Name: DefaultCredentialsSecret}
	if err := e.kube.Get(e.ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[e.server+".password"] = []byte("rotated")
	if err := e.kube.Update(e.ctx, secret); err != nil {
		t.Fatal(err)
	}
	_, err = e.a.Exists(e.ctx, ms[0])
	mustContain(t, err, "logging in to vCenter")
}

// The cluster ID tag's absence is remembered for OpenShift's 12 hours, not for the session's life: a tag the
// administrator creates later is attached once that time has passed.
// Breaks if: the tag ID cache never expires, or expires at once (each Update would list every category).
func TestClusterTagLookupExpires(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newSimEnvWith(t, nil, Options{Clock: clk})
	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	if err := call(m, e.a.Update, true); err != nil { // no cluster tag yet: remembered
		t.Fatal(err)
	}
	tm, tag := e.createClusterTag(t)
	attached := func() bool {
		t.Helper()
		ids, err := tm.ListAttachedTags(e.ctx, e.vm("worker-0").Reference())
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, tag)
	}
	clk.SetTime(clk.Now().Add(tagIDTTL - time.Minute))
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatal(err)
	}
	if attached() {
		t.Error("the cluster tag was looked up again before the cache expired")
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatal(err)
	}
	if !attached() {
		t.Error("the cluster tag created later is not attached after the cache expired")
	}
}
