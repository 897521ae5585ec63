package operator

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestDeploymentOperand(t *testing.T) {
	since := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	deploy := func(gen, observed int64, replicas, updated, available, unavailable int32, cond corev1.ConditionStatus) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "machine-api-controllers", Generation: gen, CreationTimestamp: metav1.NewTime(since.Add(-time.Hour))},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				AvailableReplicas: available, UnavailableReplicas: unavailable},
		}
		if cond != "" {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: cond, LastTransitionTime: metav1.NewTime(since)}}
		}
		return d
	}
	tests := []struct {
		name                 string
		d                    *appsv1.Deployment
		rolledOut, available bool
		since                time.Time
		msg                  string
	}{
		{name: "rolled out and available", d: deploy(2, 2, 1, 1, 1, 0, corev1.ConditionTrue), rolledOut: true, available: true, since: since},
		{name: "new generation not observed", d: deploy(3, 2, 1, 1, 1, 0, corev1.ConditionTrue), available: true, since: since, msg: "not observed"},
		{name: "replica not updated", d: deploy(2, 2, 1, 0, 1, 0, corev1.ConditionTrue), available: true, since: since, msg: "0 of 1 replicas updated"},
		{name: "old replica pending termination", d: deploy(2, 2, 2, 1, 1, 1, corev1.ConditionTrue), available: true, since: since, msg: "old replicas pending"},
		{name: "rolled out but unavailable: an outage", d: deploy(2, 2, 1, 1, 0, 1, corev1.ConditionFalse), rolledOut: true, since: since, msg: "0 of 1 replicas available"},
		{name: "no condition yet: since creation", d: deploy(1, 0, 0, 0, 0, 0, ""), since: since.Add(-time.Hour), msg: "not observed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DeploymentOperand(tt.d)
			if got.RolledOut != tt.rolledOut || got.Available != tt.available || !got.Since.Equal(tt.since) {
				t.Errorf("got rolledOut=%v available=%v since=%s, want %v %v %s", got.RolledOut, got.Available, got.Since, tt.rolledOut, tt.available, tt.since)
			}
			if !strings.Contains(got.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", got.Message, tt.msg)
			}
		})
	}
}
