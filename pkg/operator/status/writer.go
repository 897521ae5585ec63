package status

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorder records events; k8s.io/client-go/tools/events.EventRecorder
// satisfies it.
type Recorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Writer reads and persists the ClusterOperator.
type Writer struct {
	// Client writes; Reader reads (normally the informer cache).
	Client client.Client
	Reader client.Reader
	// Recorder receives one event per condition transition.
	Recorder Recorder
	// Name of the ClusterOperator ("machine-api").
	Name string
}

// Get returns the live ClusterOperator, or a new unsaved one if it does not exist.
func (w *Writer) Get(ctx context.Context) (*configv1.ClusterOperator, error) {
	co := &configv1.ClusterOperator{}
	err := w.Reader.Get(ctx, client.ObjectKey{Name: w.Name}, co)
	if apierrors.IsNotFound(err) {
		return &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting clusteroperator %s: %w", w.Name, err)
	}
	return co, nil
}

// Write persists next as the status of co (creating co if it has no
// resourceVersion yet), unless it already equals the live status, and records
// an event for every condition that changed status or reason. It returns
// whether anything was written.
func (w *Writer) Write(ctx context.Context, co *configv1.ClusterOperator, next configv1.ClusterOperatorStatus) (bool, error) {
	if co.ResourceVersion != "" && equality.Semantic.DeepEqual(co.Status, next) {
		return false, nil
	}
	prev := co.Status
	if co.ResourceVersion == "" {
		created := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}
		if err := w.Client.Create(ctx, created); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating clusteroperator %s: %w", w.Name, err)
		} else if err != nil {
			// Someone created it since our read; take theirs and retry later.
			return false, fmt.Errorf("clusteroperator %s was created concurrently: %w", w.Name, err)
		}
		co = created
	}
	updated := co.DeepCopy()
	updated.Status = next
	if err := w.Client.Status().Update(ctx, updated); err != nil {
		// A conflict means our view is stale; the watch brings the new
		// version and the next sync recomputes from it.
		return false, fmt.Errorf("updating clusteroperator %s status: %w", w.Name, err)
	}
	w.recordTransitions(updated, prev.Conditions, next.Conditions)
	return true, nil
}

// recordTransitions emits one event per condition whose status or reason
// changed. Events are therefore bounded by real transitions: repeated syncs
// in the same state emit nothing.
func (w *Writer) recordTransitions(co *configv1.ClusterOperator, prev, next []configv1.ClusterOperatorStatusCondition) {
	if w.Recorder == nil {
		return
	}
	for _, t := range Transitions(prev, next) {
		w.Recorder.Eventf(co, nil, t.Type, t.Reason, "StatusChanged", "%s", t.Message)
	}
}

// Event is an event to record for a condition transition.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Transitions lists the events for the operator's own conditions that changed
// status or reason between prev and next. Message-only changes are not events.
func Transitions(prev, next []configv1.ClusterOperatorStatusCondition) []Event {
	var events []Event
	for _, c := range next {
		if !ownCondition(c.Type) {
			continue
		}
		p := find(prev, c.Type)
		if p != nil && p.Status == c.Status && p.Reason == c.Reason {
			continue
		}
		bad := (c.Type == configv1.OperatorDegraded && c.Status == configv1.ConditionTrue) ||
			(c.Type == configv1.OperatorAvailable && c.Status == configv1.ConditionFalse && p != nil) ||
			(c.Type == configv1.OperatorUpgradeable && c.Status == configv1.ConditionFalse)
		typ := corev1.EventTypeNormal
		if bad {
			typ = corev1.EventTypeWarning
		}
		msg := fmt.Sprintf("%s changed to %s (%s)", c.Type, c.Status, c.Reason)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		events = append(events, Event{Type: typ, Reason: fmt.Sprintf("%s%s", c.Type, c.Status), Message: msg})
	}
	return events
}

// RelatedObjects are the objects must-gather and humans should look at:
// OpenShift's list plus the operand Deployment and webhook configurations.
func RelatedObjects(namespace string) []configv1.ObjectReference {
	return []configv1.ObjectReference{
		{Group: "", Resource: "namespaces", Name: namespace},
		{Group: "machine.openshift.io", Resource: "machines", Namespace: namespace},
		{Group: "machine.openshift.io", Resource: "machinesets", Namespace: namespace},
		{Group: "machine.openshift.io", Resource: "machinehealthchecks", Namespace: namespace},
		// This project's addition (OpenShift has no MachineDeployment).
		{Group: "machine.openshift.io", Resource: "machinedeployments", Namespace: namespace},
		{Group: "apps", Resource: "deployments", Namespace: namespace, Name: "machine-api-controllers"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "machine-api-operator"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "machine-api-controllers"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: namespace},
		// The BareMetal provider's hosts, as OpenShift lists them.
		{Group: "metal3.io", Resource: "baremetalhosts", Namespace: namespace},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "machine-api"},
		{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "machine-api"},
	}
}
