package v1beta1

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestWireNames pins the JSON names shared with medik8s's
// node-maintenance-operator (note the lowercase "totalpods").
func TestWireNames(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	nm := NodeMaintenance{
		Spec: NodeMaintenanceSpec{NodeName: "n", Reason: "r", DrainTimeout: &metav1.Duration{Duration: time.Minute}},
		Status: NodeMaintenanceStatus{
			Phase: MaintenanceRunning, DrainProgress: 50, LastUpdate: &now, LastError: "e",
			PendingPods: []string{"p"}, PendingPodsRefs: []PodReference{{Namespace: "ns", Name: "p"}},
			TotalPods: 3, EvictionPods: 2, ErrorOnLeaseCount: 1, DrainStartTime: &now,
		},
	}
	data, err := json.Marshal(nm)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodeName", "reason", "drainTimeout"} {
		if _, ok := got["spec"][k]; !ok {
			t.Errorf("spec.%s missing in %s", k, data)
		}
	}
	for _, k := range []string{"phase", "drainProgress", "lastUpdate", "lastError", "pendingPods", "pendingPodsRefs",
		"totalpods", "evictionPods", "errorOnLeaseCount", "drainStartTime"} {
		if _, ok := got["status"][k]; !ok {
			t.Errorf("status.%s missing in %s", k, data)
		}
	}
	if got["spec"]["drainTimeout"] != "1m0s" {
		t.Errorf("drainTimeout = %v", got["spec"]["drainTimeout"])
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{Kind, Kind + "List"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered", kind)
		}
	}
}
