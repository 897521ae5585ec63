package nodemaintenance

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestEventsAreMedik8s: what `kubectl get events` and a core/v1 client see of an event is medik8s's:
// source.component and reportingComponent NodeMaintenance, no action, in namespace default for the
// cluster-scoped NodeMaintenance and Node. Breaks if: the events go through events.k8s.io (source
// empty, an action set) or name another reporter.
func TestEventsAreMedik8s(t *testing.T) {
	const node = "events-node"
	createNode(t, node)
	nm := createNM(t, "events", node)
	rec := newCoreRecorder(kube, env.Scheme)
	t.Cleanup(rec.broadcaster.Shutdown)
	rec.Eventf(nm, nil, corev1.EventTypeNormal, EventBeginMaintenance, "Maintain", "%s", EventMessageBeginMaintenance)
	rec.Eventf(getNode(t, node), nil, corev1.EventTypeNormal, EventUncordonNode, "Release", "%s", EventMessageUncordonNode)

	for _, want := range []struct{ kind, apiVersion, name, uid, reason, message string }{
		{"NodeMaintenance", "nodemaintenance.medik8s.io/v1beta1", nm.Name, string(nm.UID), EventBeginMaintenance, EventMessageBeginMaintenance},
		{"Node", "v1", node, string(getNode(t, node).UID), EventUncordonNode, EventMessageUncordonNode},
	} {
		poll.Eventually(t, waitTimeout, "core/v1 event "+want.reason, func(ctx context.Context) (bool, error) {
			list, err := kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + want.name})
			if err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Reason != want.reason {
					continue
				}
				if e.Source.Component != EventSource || e.ReportingController != EventSource || e.Action != "" || e.Related != nil ||
					e.Type != corev1.EventTypeNormal || e.Message != want.message || e.InvolvedObject.Kind != want.kind ||
					e.InvolvedObject.APIVersion != want.apiVersion || string(e.InvolvedObject.UID) != want.uid {
					return false, fmt.Errorf("event = %+v", e)
				}
				return true, nil
			}
			return false, fmt.Errorf("no %s event among %d", want.reason, len(list.Items))
		})
	}
	if EventSource != "NodeMaintenance" { // medik8s's cmd/main.go operatorName
		t.Errorf("EventSource = %q", EventSource)
	}
}
