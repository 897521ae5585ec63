package vsphere

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"

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
