package status

import (
	"context"
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorder records events (events.EventRecorder satisfies it).
type Recorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{})
}

// Writer reads and persists the ClusterOperator.
type Writer struct {
	Client   client.Client
	Reader   client.Reader // normally the informer cache
	Recorder Recorder      // one event per condition transition
	Name     string        // "machine-api"
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

// Write persists next as co's status (creating co if new) unless unchanged,
// records an event per transition, and says whether it wrote.
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
		// A conflict: the watch brings the new version for the next sync.
		return false, fmt.Errorf("updating clusteroperator %s status: %w", w.Name, err)
	}
	if w.Recorder != nil {
		for _, t := range Events(prev.Conditions, next.Conditions) {
			w.Recorder.Eventf(updated, nil, t.Type, t.Reason, "StatusChanged", "%s", t.Message)
		}
	}
	return true, nil
}

// Event is an event to record for a condition transition.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// OpenShift's operator's event reasons, which this operator records too.
const (
	// EventReasonUpgrade: Progressing towards a release (install or upgrade), once per version.
	EventReasonUpgrade = "Status upgrade"
	// EventReasonDegraded: Degraded=True, once per distinct message.
	EventReasonDegraded = "Status degraded"
)

// Events are the events for a status change: Transitions, then OpenShift's.
func Events(prev, next []configv1.ClusterOperatorStatusCondition) []Event {
	events := Transitions(prev, next)
	if a := upgradeAnnouncement(find(next, configv1.OperatorProgressing)); a != "" && a != upgradeAnnouncement(find(prev, configv1.OperatorProgressing)) {
		events = append(events, Event{Type: corev1.EventTypeNormal, Reason: EventReasonUpgrade, Message: a})
	}
	if d, p := find(next, configv1.OperatorDegraded), find(prev, configv1.OperatorDegraded); d != nil && d.Status == configv1.ConditionTrue &&
		(p == nil || p.Status != configv1.ConditionTrue || p.Message != d.Message) {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: EventReasonDegraded, Message: d.Message})
	}
	return events
}

// upgradeAnnouncement is OpenShift's "Progressing towards operator: <version>" that c's
// message starts with while versions differ, without the operand's progress after it
// (which changes during a rollout); "" otherwise. Versions hold no ": ".
func upgradeAnnouncement(c *configv1.ClusterOperatorStatusCondition) string {
	if c == nil || c.Status != configv1.ConditionTrue || c.Reason != ReasonSyncing || !strings.HasPrefix(c.Message, upgradeMessagePrefix) {
		return ""
	}
	name, rest, _ := strings.Cut(strings.TrimPrefix(c.Message, upgradeMessagePrefix), ": ")
	version, _, _ := strings.Cut(rest, ": ")
	return upgradeMessagePrefix + name + ": " + version
}

// Transitions lists the events for our conditions whose status or reason changed.
func Transitions(prev, next []configv1.ClusterOperatorStatusCondition) []Event {
	var events []Event
	for _, c := range next {
		if !slices.Contains(ownConditions, c.Type) {
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

// RelatedObjects are what must-gather and humans look at: OpenShift's list
// plus the operand Deployment and webhook configurations.
func RelatedObjects(namespace string) []configv1.ObjectReference {
	return []configv1.ObjectReference{
		{Group: "", Resource: "namespaces", Name: namespace},
		{Group: "machine.openshift.io", Resource: "machines", Namespace: namespace},
		{Group: "machine.openshift.io", Resource: "machinesets", Namespace: namespace},
		{Group: "machine.openshift.io", Resource: "machinehealthchecks", Namespace: namespace},
		{Group: "machine.openshift.io", Resource: "machinedeployments", Namespace: namespace},
		{Group: "apps", Resource: "deployments", Namespace: namespace, Name: "machine-api-controllers"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "machine-api-operator"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "machine-api-controllers"},
		{Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: namespace},
		{Group: "metal3.io", Resource: "baremetalhosts", Namespace: namespace},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "machine-api"},
		{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "machine-api"},
	}
}
