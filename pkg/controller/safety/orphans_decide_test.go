package safety

import (
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// TestOrphanInstances: only an old instance that carries an ownership mark, whose namespace was listed and
// that no Machine there owns (name and UID, or providerID) is an orphan. Breaks if: any one of the keep rules
// is dropped (its row then lists the instance), or Machines were matched by name alone (the recreated row).
func TestOrphanInstances(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := 15 * time.Minute
	old := now.Add(-time.Hour)
	mach := func(ns, name, uid, providerID, phase string) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
		if providerID != "" {
			m.Spec.ProviderID = ptr.To(providerID)
		}
		if phase != "" {
			m.Status.Phase = ptr.To(phase)
		}
		return m
	}
	deleting := mach("a", "deleting", "u-del", "p://deleting", machinev1beta1.PhaseDeleting)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	machines := []*machinev1beta1.Machine{
		mach("a", "running", "u-run", "p://running", machinev1beta1.PhaseRunning),
		mach("a", "new", "u-new", "", ""),
		mach("a", "recreated", "u-2", "", machinev1beta1.PhaseProvisioning),
		mach("b", "worker-0", "u-b0", "p://b0", machinev1beta1.PhaseRunning), // a second installation's
		deleting,
	}
	listed := map[string]bool{"a": true, "b": true}
	mark := func(ns, name, uid string) provider.Owner {
		return provider.Owner{Namespace: ns, Name: name, UID: types.UID(uid)}
	}
	inst := func(id, name string, owner provider.Owner) provider.Instance {
		return provider.Instance{ProviderID: id, Name: name, CreatedAt: old, Owner: owner}
	}
	tests := []struct {
		name   string
		inst   provider.Instance
		orphan bool
	}{
		{"owned by providerID", inst("p://running", "x", mark("a", "x", "u-x")), false},
		{"its Machine exists (name and UID)", inst("p://new", "new", mark("a", "new", "u-new")), false},
		{"a Machine being deleted still owns it", inst("p://deleting", "deleting", mark("a", "deleting", "u-del")), false},
		{"a second installation's, its Machine exists there", inst("p://b0", "worker-0", mark("b", "worker-0", "u-b0")), false},
		{"no mark (the installer's, a user's)", inst("p://installer", "master-0", provider.Owner{}), false},
		{"marked with a namespace that could not be listed", inst("p://c", "worker-0", mark("c", "worker-0", "u-c")), false},
		{"younger than the grace", provider.Instance{ProviderID: "p://young", Name: "young", CreatedAt: now.Add(-grace + time.Second), Owner: mark("a", "young", "u")}, false},
		{"no creation time", provider.Instance{ProviderID: "p://unknown-age", Name: "unknown-age", Owner: mark("a", "unknown-age", "u")}, false},
		{"no providerID", provider.Instance{Name: "no-id", CreatedAt: old, Owner: mark("a", "no-id", "u")}, false},
		{"its Machine is gone", inst("p://gone", "gone", mark("a", "gone", "u-gone")), true},
		{"exactly the grace old", provider.Instance{ProviderID: "p://grace", Name: "grace", CreatedAt: now.Add(-grace), Owner: mark("a", "grace", "u")}, true},
		{"a Machine of its name but another UID (recreated) does not own it", inst("p://recreated-1", "recreated", mark("a", "recreated", "u-1")), true},
		{"a Machine of its name and UID in another namespace does not own it", inst("p://moved", "worker-0", mark("a", "worker-0", "u-b0")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := orphanInstances([]provider.Instance{tt.inst}, machines, listed, now, grace)
			if (len(got) == 1) != tt.orphan || len(got) > 1 {
				t.Errorf("orphans = %+v, want orphan=%v", got, tt.orphan)
			}
		})
	}
	all := []provider.Instance{tests[0].inst, tests[9].inst, tests[4].inst}
	if got := orphanInstances(all, machines, listed, now, grace); !slices.Equal(got, []provider.Instance{tests[9].inst}) {
		t.Errorf("mixed list: orphans %+v, want only %s", got, tests[9].inst.ProviderID)
	}
	if got := ownerNamespaces(all); !slices.Equal(got, []string{"a"}) {
		t.Errorf("owner namespaces %v, want [a] (an unmarked instance names none)", got)
	}
}
