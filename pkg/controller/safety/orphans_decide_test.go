package safety

import (
	"slices"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// TestOrphanInstances: only an old instance that no Machine owns or may be
// creating is an orphan. Breaks if: any one of the keep rules is dropped
// (its row then lists the instance).
func TestOrphanInstances(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := 15 * time.Minute
	old := now.Add(-time.Hour)
	mach := func(name, providerID, phase string) *machinev1beta1.Machine {
		m := &machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if providerID != "" {
			m.Spec.ProviderID = ptr.To(providerID)
		}
		if phase != "" {
			m.Status.Phase = ptr.To(phase)
		}
		return m
	}
	deleting := mach("deleting", "p://deleting", machinev1beta1.PhaseDeleting)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	machines := []*machinev1beta1.Machine{
		mach("running", "p://running", machinev1beta1.PhaseRunning),
		mach("provisioning", "p://elsewhere", machinev1beta1.PhaseProvisioning),
		mach("new", "", ""),
		mach("failed-without-id", "", machinev1beta1.PhaseFailed),
		mach("replaced", "p://replaced-2", machinev1beta1.PhaseRunning),
		deleting,
	}
	tests := []struct {
		name   string
		inst   machine.Instance
		orphan bool
	}{
		{"owned by providerID", machine.Instance{ProviderID: "p://running", Name: "x", CreatedAt: old}, false},
		{"a Machine being deleted still owns it", machine.Instance{ProviderID: "p://deleting", Name: "deleting", CreatedAt: old}, false},
		{"name of a Provisioning Machine", machine.Instance{ProviderID: "p://provisioning", Name: "provisioning", CreatedAt: old}, false},
		{"name of a Machine without phase or providerID", machine.Instance{ProviderID: "p://new", Name: "new", CreatedAt: old}, false},
		{"name of a Machine without providerID", machine.Instance{ProviderID: "p://f", Name: "failed-without-id", CreatedAt: old}, false},
		{"younger than the grace", machine.Instance{ProviderID: "p://young", Name: "young", CreatedAt: now.Add(-grace + time.Second)}, false},
		{"no creation time", machine.Instance{ProviderID: "p://unknown-age", Name: "unknown-age"}, false},
		{"no providerID", machine.Instance{Name: "no-id", CreatedAt: old}, false},
		{"no Machine at all", machine.Instance{ProviderID: "p://gone", Name: "gone", CreatedAt: old}, true},
		{"exactly the grace old", machine.Instance{ProviderID: "p://grace", Name: "grace", CreatedAt: now.Add(-grace)}, true},
		{"a running Machine of its name has another instance", machine.Instance{ProviderID: "p://replaced-1", Name: "replaced", CreatedAt: old}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := orphanInstances([]machine.Instance{tt.inst}, machines, now, grace)
			if (len(got) == 1) != tt.orphan || len(got) > 1 {
				t.Errorf("orphans = %+v, want orphan=%v", got, tt.orphan)
			}
		})
	}
	all := []machine.Instance{tests[0].inst, tests[8].inst, tests[2].inst}
	if got := orphanInstances(all, machines, now, grace); !slices.Equal(got, []machine.Instance{tests[8].inst}) {
		t.Errorf("mixed list: orphans %+v, want only %s", got, tests[8].inst.ProviderID)
	}
}
