package machinehealthcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
)

// Options configure a Reconciler.
type Options struct {
	// Namespace (optional) restricts the controller to one namespace.
	Namespace string
	// Client reads through a cache with the machinenode.NodeRefNameField index
	// (SetupWithManager registers it) and writes. Default: the manager's.
	Client client.Client
	// APIReader reads uncached: Nodes missing from the cache, remediation
	// templates and requests. Default: the manager's.
	APIReader client.Reader
	// Recorder (optional) receives events. Default: the manager's, named ControllerName.
	Recorder events.EventRecorder
	// Clock (optional) is the time source.
	Clock clock.PassiveClock
	// RemediationBurst and RemediationInterval rate-limit each
	// MachineHealthCheck's remediations (token bucket); 0 disables (default).
	RemediationBurst    int
	RemediationInterval time.Duration
	// RemediationBackoff delays repeated remediation for the same cause (off by default).
	RemediationBackoff bool
	// NodeStartupTimeoutFrom is when spec.nodeStartupTimeout starts (empty: StartupFromCreation).
	NodeStartupTimeoutFrom StartupClock
}

// Validate rejects a negative burst, a burst without a positive interval and an unknown clock.
func (o Options) Validate() error {
	if o.RemediationBurst < 0 {
		return fmt.Errorf("the remediation burst (--remediation-burst) must not be negative, got %d", o.RemediationBurst)
	}
	if o.RemediationBurst > 0 && o.RemediationInterval <= 0 {
		return fmt.Errorf("the remediation interval (--remediation-interval) must be positive when the remediation burst (%d) is, got %s", o.RemediationBurst, o.RemediationInterval)
	}
	switch o.NodeStartupTimeoutFrom {
	case "", StartupFromCreation, StartupFromLastUpdated:
	default:
		return fmt.Errorf("the node startup clock (--node-startup-timeout-from) must be %q or %q, got %q", StartupFromCreation, StartupFromLastUpdated, o.NodeStartupTimeoutFrom)
	}
	return nil
}

// withDefaults fills in the zero fields that need no manager (SetupWithManager fills in the others).
func (o Options) withDefaults() Options {
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	o.NodeStartupTimeoutFrom = cmp.Or(o.NodeStartupTimeoutFrom, StartupFromCreation)
	return o
}

// Reconciler is the MachineHealthCheck controller.
type Reconciler struct {
	opts    Options // defaulted
	writes  *readyourwrites.Memo
	events  *patch.Events
	limit   rateLimit
	backoff backoffPolicy
	pacing  sync.Map // types.NamespacedName → *mhcPacing, in memory
}

// NewReconciler returns a MachineHealthCheck controller with opts' defaults
// filled in. It registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	opts = opts.withDefaults()
	return &Reconciler{
		opts:    opts,
		writes:  readyourwrites.New(),
		events:  &patch.Events{Recorder: opts.Recorder},
		limit:   rateLimit{burst: opts.RemediationBurst, interval: opts.RemediationInterval},
		backoff: defaultBackoff,
	}
}

// target is one selected Machine with its Node and verdict.
type target struct {
	machine *machinev1beta1.Machine
	node    *corev1.Node // nil: no nodeRef, or the Node is gone (or replaced)
	verdict verdict
}

// Reconcile observes one MachineHealthCheck's targets, decides their
// health, remediates what it may and reports the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.opts.Namespace != "" && req.Namespace != r.opts.Namespace {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	mhc := &machinev1beta1.MachineHealthCheck{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, mhc); err != nil {
		if apierrors.IsNotFound(err) {
			r.events.Forget(req.NamespacedName)
			r.writes.Forget(req.NamespacedName)
			r.pacing.Delete(req.NamespacedName)
			deleteMetrics(req.Name, req.Namespace)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading MachineHealthCheck %s: %w", req.NamespacedName, err)
	}
	if mhc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.opts.Clock.Now()
	if r.writes.Stale(req.NamespacedName, mhc.ResourceVersion, now) { // deciding on it would repeat our last write
		return ctrl.Result{RequeueAfter: readyourwrites.CatchUpDelay}, nil
	}

	// Observe.
	selector, err := metav1.LabelSelectorAsSelector(&mhc.Spec.Selector)
	if err != nil {
		return ctrl.Result{}, r.reportInvalid(ctx, mhc, fmt.Sprintf("spec.selector is invalid: %v", err), now)
	}
	targets, err := r.listTargets(ctx, mhc, selector)
	if err != nil {
		return ctrl.Result{}, err
	}
	requests, err := r.listRequests(ctx, mhc)
	if err != nil {
		return ctrl.Result{}, err // not knowing what is in remediation, remediate nothing
	}

	// Decide.
	params := paramsOf(mhc, r.opts.NodeStartupTimeoutFrom)
	verdicts := make([]verdict, len(targets))
	for i, t := range targets {
		v := assess(t.machine, t.node, params, now)
		v.External = underExternalRemediation(t.machine, v.Health, requests.of(t.machine) != nil)
		targets[i].verdict, verdicts[i] = v, v
	}
	sum := summarize(verdicts, mhc.Spec.MaxUnhealthy)
	_, paused := mhc.Annotations[PausedAnnotation]
	key := client.ObjectKeyFromObject(mhc)
	log.V(4).Info("assessed targets", "expected", sum.Expected, "healthy", sum.Healthy, "unhealthy", sum.Unhealthy,
		"deleting", sum.Deleting, "external", sum.External, "maxUnhealthy", sum.MaxUnhealthy, "paused", paused, "requeue", sum.Requeue)

	st := mhc.Status.DeepCopy()
	st.ExpectedMachines = ptr.To(sum.Expected)
	st.CurrentHealthy = ptr.To(sum.Healthy)
	st.RemediationsAllowed = sum.RemediationsAllowed
	notAllowed := func(reason string, sev machinev1beta1.ConditionSeverity, msg string) machinev1beta1.Condition {
		return conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, reason, sev, msg)
	}
	allowed := conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed, "", "")
	restricted := !paused && sum.MaxErr == nil && !sum.Allowed
	switch {
	case paused:
		st.RemediationsAllowed = 0
		allowed = notAllowed(ReasonPaused, machinev1beta1.ConditionSeverityInfo,
			fmt.Sprintf("The MachineHealthCheck is paused (annotation %s)", PausedAnnotation))
	case sum.MaxErr != nil: // RemediationsAllowed is 0
		allowed = notAllowed(ReasonInvalidSpec, machinev1beta1.ConditionSeverityError, sum.MaxErr.Error())
	case restricted:
		allowed = notAllowed(machinev1beta1.TooManyUnhealthyReason, machinev1beta1.ConditionSeverityWarning,
			restrictedMessage(sum, mhc.Spec.MaxUnhealthy))
	}
	c := conditions.Get(mhc.Status.Conditions, machinev1beta1.RemediationAllowedCondition)
	wasRestricted := c != nil && c.Status == corev1.ConditionFalse && c.Reason == machinev1beta1.TooManyUnhealthyReason
	st.Conditions = conditions.Set(st.Conditions, allowed, now)
	if mhc.Spec.RemediationTemplate == nil {
		st.Conditions = conditions.Remove(st.Conditions, machinev1beta1.ExternalRemediationTemplateAvailable)
		st.Conditions = conditions.Remove(st.Conditions, machinev1beta1.ExternalRemediationRequestAvailable)
	}

	// Act.
	r.reportTargets(mhc, targets)
	var actErr error
	requeue := sum.Requeue
	if !paused {
		if sum.Allowed && sum.MaxErr == nil {
			var wait time.Duration
			wait, actErr = r.remediate(ctx, mhc, targets, st, now)
			requeue = earliest(requeue, wait)
		}
		if mhc.Spec.RemediationTemplate != nil {
			actErr = errors.Join(actErr, r.cleanupRequests(ctx, mhc, targets, requests))
		}
	}

	// Report.
	if r.setRestricted(key, restricted) && restricted && !wasRestricted {
		r.events.Eventf(mhc, nil, corev1.EventTypeWarning, EventRemediationRestricted, "Remediate", "%s", allowed.Message)
	}
	if restricted {
		log.V(2).Info("remediation short-circuited", "message", allowed.Message)
	}
	setMetrics(mhc.Name, mhc.Namespace, sum.Expected, restricted)
	if err := errors.Join(actErr, r.patchStatus(ctx, mhc, st, now)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// listTargets lists the Machines selected by mhc with their Nodes.
func (r *Reconciler) listTargets(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, selector labels.Selector) ([]target, error) {
	list := &machinev1beta1.MachineList{}
	if err := r.opts.Client.List(ctx, list, client.InNamespace(mhc.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing the Machines of MachineHealthCheck %s/%s: %w", mhc.Namespace, mhc.Name, err)
	}
	targets := make([]target, 0, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		t := target{machine: m}
		if m.Status.NodeRef != nil && m.Status.NodeRef.Name != "" && m.DeletionTimestamp == nil {
			node, err := r.getNode(ctx, m.Status.NodeRef)
			if err != nil {
				return nil, err
			}
			t.node = node
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// getNode returns ref's Node, nil when it is gone (see sameNode). What the
// cache lacks is confirmed uncached: a lagging cache never gets a Machine deleted.
func (r *Reconciler) getNode(ctx context.Context, ref *corev1.ObjectReference) (*corev1.Node, error) {
	for _, rd := range []client.Reader{r.opts.Client, r.opts.APIReader} {
		node := &corev1.Node{}
		err := rd.Get(ctx, types.NamespacedName{Name: ref.Name}, node)
		switch {
		case err == nil && sameNode(ref, node):
			return node, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading Node %s: %w", ref.Name, err)
		}
	}
	return nil, nil
}

// reportTargets records DetectedUnhealthy once per Machine and state, and
// forgets the events of Machines that are healthy again or gone.
func (r *Reconciler) reportTargets(mhc *machinev1beta1.MachineHealthCheck, targets []target) {
	key := client.ObjectKeyFromObject(mhc)
	keep := map[string]bool{"": true} // "": events about the MachineHealthCheck itself
	for _, t := range targets {
		switch t.verdict.Health {
		case Unhealthy, Suspect:
			keep[t.machine.Name] = true
			verb := map[Health]string{Unhealthy: "is", Suspect: "may be"}[t.verdict.Health]
			r.machineEventOnce(key, t.machine, corev1.EventTypeNormal, EventDetectedUnhealthy,
				fmt.Sprintf("Machine %s/%s %s unhealthy: %s", t.machine.Namespace, t.machine.Name, verb, t.verdict.Reason))
		case Deleting:
			keep[t.machine.Name] = true // keep the memo until it is gone
		}
	}
	r.events.KeepOnly(key, keep)
}

// remediate acts on every Unhealthy target, oldest first, as the pacing allows; it
// returns when a held-back remediation may go ahead (0: none).
func (r *Reconciler) remediate(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) (time.Duration, error) {
	key := client.ObjectKeyFromObject(mhc)
	var errs []error
	var ext *externalRemediation
	pass := r.newPacingPass(ctx, mhc, targets, now)
	// record records the outcome of a remediation of t under bk.
	record := func(t target, bk backoffKey) func(done bool, err error) {
		return func(done bool, err error) {
			if done {
				pass.remediated(t, bk)
			}
			errs = append(errs, err)
		}
	}
	for _, t := range unhealthyOldestFirst(targets) {
		m, why := t.machine, t.verdict.Reason
		switch decideRemediation(mhc, m, t.node) {
		case remediateSkipExcluded:
			r.machineEventOnce(key, m, corev1.EventTypeNormal, EventSkippedExcluded, "Not remediating: "+excludedNode(t.node))
		case remediateRequest:
			if ext == nil {
				ext = r.newExternalRemediation(ctx, mhc, st, now)
			}
			bk := machineBackoffKey(m)
			record(t, bk)(ext.request(ctx, m, func() bool { return pass.admit(t, bk) }))
		case remediateAnnotate:
			if bk := machineBackoffKey(m); pass.admit(t, bk) {
				record(t, bk)(r.annotateForBaremetal(ctx, mhc, m, why))
			}
		case remediateSkipNoController:
			r.machineEventOnce(key, m, corev1.EventTypeWarning, EventSkippedNoController,
				fmt.Sprintf("Not deleting Machine %s (%s): it has no controller owner to replace it", m.Name, why))
		case remediateDelete:
			if bk := pass.ownerBackoffKey(metav1.GetControllerOf(m)); pass.admit(t, bk) {
				record(t, bk)(r.deleteMachine(ctx, mhc, m, why))
			}
		}
	}
	return pass.done(), errors.Join(errs...)
}

// unhealthyOldestFirst returns the Unhealthy targets, the oldest Machine
// first (then by name): the order in which the pacing serves them.
func unhealthyOldestFirst(targets []target) []target {
	out := slices.DeleteFunc(slices.Clone(targets), func(t target) bool { return t.verdict.Health != Unhealthy })
	slices.SortStableFunc(out, func(a, b target) int {
		return cmp.Or(a.machine.CreationTimestamp.Compare(b.machine.CreationTimestamp.Time), strings.Compare(a.machine.Name, b.machine.Name))
	})
	return out
}

// deleteMachine deletes m (precondition: same UID) and records the outcome;
// deleted reports whether this call deleted it.
func (r *Reconciler) deleteMachine(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, m *machinev1beta1.Machine, why string) (deleted bool, err error) {
	ctrl.LoggerFrom(ctx).Info("deleting unhealthy Machine", "machine", m.Name, "reason", why)
	err = r.opts.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil // gone or replaced meanwhile
	}
	if err != nil {
		r.machineEventOnce(client.ObjectKeyFromObject(mhc), m, corev1.EventTypeWarning, EventMachineDeletionFailed,
			fmt.Sprintf("Deleting unhealthy Machine %s failed: %v", m.Name, err))
		return false, fmt.Errorf("deleting unhealthy Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	RemediationSuccessTotal.WithLabelValues(mhc.Name, mhc.Namespace).Inc()
	r.events.Eventf(m, mhc, corev1.EventTypeNormal, EventMachineDeleted, "Remediate",
		"Machine %s deleted by MachineHealthCheck %s: %s", m.Name, mhc.Name, why)
	return true, nil
}

// reportInvalid marks mhc as unable to remediate; it is not requeued (a fix
// changes the MachineHealthCheck).
func (r *Reconciler) reportInvalid(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, msg string, now time.Time) error {
	ctrl.LoggerFrom(ctx).Info("MachineHealthCheck is invalid; not remediating", "err", msg)
	st := mhc.Status.DeepCopy()
	st.RemediationsAllowed = 0
	st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse,
		ReasonInvalidSpec, machinev1beta1.ConditionSeverityError, msg), now)
	return r.patchStatus(ctx, mhc, st, now)
}

// statusFields: the controller is the status's only writer (docs/architecture.md, "Status writes and events").
var statusFields = patch.Fields{Manager: ControllerName, All: true}

// patchStatus writes st when it differs from mhc's status, and remembers
// the write until the cache shows it (package internal/readyourwrites).
func (r *Reconciler) patchStatus(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) error {
	readVersion := mhc.ResourceVersion
	if err := patch.SetStatus(ctx, r.opts.Client, mhc, func(mhc *machinev1beta1.MachineHealthCheck) { mhc.Status = *st }, statusFields); err != nil {
		return client.IgnoreNotFound(err)
	}
	if mhc.ResourceVersion != readVersion {
		r.writes.Wrote(client.ObjectKeyFromObject(mhc), readVersion, mhc.ResourceVersion, now)
	}
	return nil
}

// machineEventOnce records an event on m unless the same reason and note
// were recorded for it last; it reports whether it recorded one.
func (r *Reconciler) machineEventOnce(mhc types.NamespacedName, m *machinev1beta1.Machine, eventType, reason, note string) bool {
	return r.events.Once(mhc, m.Name, patch.Event{Regarding: m, Type: eventType, Reason: reason, Action: "Remediate", Note: note})
}

// setRestricted remembers whether mhc is short-circuited and reports a change, so
// RemediationRestricted is recorded once per transition even behind a lagging cache.
func (r *Reconciler) setRestricted(mhc types.NamespacedName, restricted bool) bool {
	if restricted {
		return r.events.First(mhc, "", restrictedMemo, "")
	}
	return r.events.Clear(mhc, "", restrictedMemo)
}

// restrictedMemo is setRestricted's memo reason (no event has it).
const restrictedMemo = "short-circuited"
