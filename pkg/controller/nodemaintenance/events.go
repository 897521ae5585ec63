package nodemaintenance

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventSource is the reporter medik8s's events name (its recorder's): a core/v1 Event's source.component
// and reportingComponent. Through events.k8s.io, source would stay empty.
const EventSource = "NodeMaintenance"

// coreRecorder records core/v1 Events as medik8s's recorder does: no action, no related object, repeats
// counted. Added to the manager, it stops its broadcaster when the manager stops.
type coreRecorder struct {
	broadcaster record.EventBroadcaster
	rec         record.EventRecorder
}

func newCoreRecorder(kube kubernetes.Interface, scheme *runtime.Scheme) *coreRecorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events(metav1.NamespaceAll)})
	return &coreRecorder{broadcaster: b, rec: b.NewRecorder(scheme, corev1.EventSource{Component: EventSource})}
}

// Eventf drops related and action, which medik8s's events do not have.
func (c *coreRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	c.rec.Eventf(regarding, eventtype, reason, note, args...)
}

// Start waits for the manager to stop, then flushes and stops the broadcaster.
func (c *coreRecorder) Start(ctx context.Context) error {
	<-ctx.Done()
	c.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection is false: the broadcaster records from construction, leader or not.
func (c *coreRecorder) NeedLeaderElection() bool { return false }
