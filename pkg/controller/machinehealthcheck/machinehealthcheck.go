package machinehealthcheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// Namespace (optional) restricts the controller to MachineHealthChecks
	// and Machines of one namespace; empty means every namespace the cache
	// sees.
	Namespace string
	// Client reads MachineHealthChecks, Machines and Nodes (from a cache
	// with the machine.NodeRefNameField index, which SetupWithManager
	// registers) and writes. Default: the manager's client.
	Client client.Client
	// APIReader reads uncached: it confirms that a Node missing from the
	// cache is gone, and reads remediation templates and requests (kinds
	// the cache does not watch). Default: the manager's API reader.
	APIReader client.Reader
	// Recorder (optional) receives events. Default: the manager's recorder
	// named ControllerName.
	Recorder events.EventRecorder
	// Clock (optional) is the time source; tests use a fake one.
	Clock clock.PassiveClock
	// RemediationBurst and RemediationInterval limit the remediations
	// (Machine deletions, external remediation requests created, Machines
	// annotated for external-baremetal) of each MachineHealthCheck with a
	// token bucket: at most RemediationBurst at once, then one per
	// RemediationInterval. A RemediationBurst or RemediationInterval of 0
	// disables the limit (the default, as OpenShift has none;
	// --remediation-burst turns it on).
	RemediationBurst    int
	RemediationInterval time.Duration
	// RemediationBackoff delays repeated remediation of one MachineSet's
	// Machines (or one Machine) for the same cause (see the package
	// documentation). Off by default, as OpenShift has none.
	RemediationBackoff bool
	// NodeStartupTimeoutFrom is when spec.nodeStartupTimeout starts:
	// StartupFromCreation (also when empty) or StartupFromLastUpdated
	// (OpenShift's).
	NodeStartupTimeoutFrom StartupClock
}

// Validate rejects a negative RemediationBurst, and a limit
// (RemediationBurst > 0) without a positive RemediationInterval.
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

// Reconciler is the MachineHealthCheck controller.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	clock     clock.PassiveClock
	namespace string
	writes    *readyourwrites.Memo
	events    *patch.Events
	limit     rateLimit
	backoff   backoffPolicy
	backoffOn bool
	pacing    *pacing
	// startupFrom is when nodeStartupTimeout starts.
	startupFrom StartupClock
}

// NewReconciler returns a MachineHealthCheck controller with opts' defaults
// filled in. It registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	r := &Reconciler{
		client:    opts.Client,
		apiReader: opts.APIReader,
		clock:     opts.Clock,
		namespace: opts.Namespace,
		writes:    readyourwrites.New(),
		events:    &patch.Events{Recorder: opts.Recorder},
		limit:     rateLimit{burst: opts.RemediationBurst, interval: opts.RemediationInterval},
		backoff:   defaultBackoff,
		backoffOn: opts.RemediationBackoff,
		pacing:    newPacing(),

		startupFrom: opts.NodeStartupTimeoutFrom,
	}
	if r.startupFrom == "" {
		r.startupFrom = StartupFromCreation
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	return r
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
	if r.namespace != "" && req.Namespace != r.namespace {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	mhc := &machinev1beta1.MachineHealthCheck{}
	if err := r.client.Get(ctx, req.NamespacedName, mhc); err != nil {
		if apierrors.IsNotFound(err) {
			r.events.Forget(req.NamespacedName)
			r.writes.Forget(req.NamespacedName)
			r.pacing.forget(req.NamespacedName)
			deleteMetrics(req.Name, req.Namespace)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading MachineHealthCheck %s: %w", req.NamespacedName, err)
	}
	if mhc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	if r.writes.Stale(req.NamespacedName, mhc.ResourceVersion, now) {
		// Our last status write is not in the cache yet: deciding on the
		// old status would repeat it.
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

	// Decide.
	params := paramsOf(mhc, r.startupFrom)
	verdicts := make([]verdict, len(targets))
	for i := range targets {
		targets[i].verdict = assess(targets[i].machine, targets[i].node, params, now)
		verdicts[i] = targets[i].verdict
	}
	sum := summarize(verdicts, mhc.Spec.MaxUnhealthy)
	_, paused := mhc.Annotations[PausedAnnotation]
	key := client.ObjectKeyFromObject(mhc)
	log.V(4).Info("assessed targets", "expected", sum.Expected, "healthy", sum.Healthy, "unhealthy", sum.Unhealthy,
		"maxUnhealthy", sum.MaxUnhealthy, "paused", paused, "requeue", sum.Requeue)

	st := mhc.Status.DeepCopy()
	st.ExpectedMachines = ptr.To(sum.Expected)
	st.CurrentHealthy = ptr.To(sum.Healthy)
	st.RemediationsAllowed = sum.RemediationsAllowed
	allowed := conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed, "", "")
	restricted := false
	switch {
	case paused:
		st.RemediationsAllowed = 0
		allowed = conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, ReasonPaused,
			machinev1beta1.ConditionSeverityInfo, fmt.Sprintf("The MachineHealthCheck is paused (annotation %s)", PausedAnnotation))
	case sum.MaxErr != nil:
		st.RemediationsAllowed = 0
		allowed = conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, ReasonInvalidSpec,
			machinev1beta1.ConditionSeverityError, sum.MaxErr.Error())
	case !sum.Allowed:
		restricted = true
		allowed = conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, machinev1beta1.TooManyUnhealthyReason,
			machinev1beta1.ConditionSeverityWarning, restrictedMessage(sum, mhc.Spec.MaxUnhealthy))
	}
	wasRestricted := false
	if c := conditions.Get(mhc.Status.Conditions, machinev1beta1.RemediationAllowedCondition); c != nil &&
		c.Status == corev1.ConditionFalse && c.Reason == machinev1beta1.TooManyUnhealthyReason {
		wasRestricted = true
	}
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
			actErr = errors.Join(actErr, r.cleanupRequests(ctx, mhc, targets))
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
	statusErr := r.patchStatus(ctx, mhc, st, now)
	if err := errors.Join(actErr, statusErr); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// earliest is the smallest positive of a and b, 0 when neither is.
func earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// listTargets lists the Machines selected by mhc with their Nodes.
func (r *Reconciler) listTargets(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, selector labels.Selector) ([]target, error) {
	list := &machinev1beta1.MachineList{}
	if err := r.client.List(ctx, list, client.InNamespace(mhc.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
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

// getNode returns the Node ref names, nil when it is gone (deleted, or
// replaced by another Node of that name: see sameNode). The cache is asked
// first; what it lacks or holds under another UID is confirmed with the API
// server, so a cache that has not seen a new Node yet (or its replacement)
// never gets its Machine deleted.
func (r *Reconciler) getNode(ctx context.Context, ref *corev1.ObjectReference) (*corev1.Node, error) {
	node := &corev1.Node{}
	err := r.client.Get(ctx, types.NamespacedName{Name: ref.Name}, node)
	if err == nil && sameNode(ref, node) {
		return node, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Node %s: %w", ref.Name, err)
	}
	node = &corev1.Node{}
	if err := r.apiReader.Get(ctx, types.NamespacedName{Name: ref.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Node %s: %w", ref.Name, err)
	}
	if !sameNode(ref, node) {
		return nil, nil
	}
	return node, nil
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
			note := fmt.Sprintf("Machine %s/%s is unhealthy: %s", t.machine.Namespace, t.machine.Name, t.verdict.Reason)
			if t.verdict.Health == Suspect {
				note = fmt.Sprintf("Machine %s/%s may be unhealthy: %s", t.machine.Namespace, t.machine.Name, t.verdict.Reason)
			}
			r.machineEventOnce(key, t.machine, corev1.EventTypeNormal, EventDetectedUnhealthy, note)
		case Deleting:
			keep[t.machine.Name] = true // keep the memo until it is gone
		}
	}
	r.events.KeepOnly(key, keep)
}

// remediate acts on every Unhealthy target, oldest first, as the pacing
// allows. It returns when a remediation held back by the pacing may go
// ahead (0: none is held back).
func (r *Reconciler) remediate(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) (time.Duration, error) {
	key := client.ObjectKeyFromObject(mhc)
	var errs []error
	var ext *externalRemediation
	pass := r.newPacingPass(ctx, mhc, targets, now)
	for _, t := range unhealthyOldestFirst(targets) {
		m := t.machine
		switch decideRemediation(mhc, m, t.node) {
		case remediateSkipExcluded:
			r.machineEventOnce(key, m, corev1.EventTypeNormal, EventSkippedExcluded, "Not remediating: "+excludedNode(t.node))
		case remediateRequest:
			if ext == nil {
				ext = r.newExternalRemediation(ctx, mhc, st, now)
			}
			bk := machineBackoffKey(m)
			created, err := ext.request(ctx, m, func() bool { return pass.admit(t, bk) })
			if created {
				pass.remediated(t, bk)
			}
			errs = append(errs, err)
		case remediateAnnotated:
			// The baremetal provider is power-cycling the host.
		case remediateAnnotate:
			bk := machineBackoffKey(m)
			if !pass.admit(t, bk) {
				continue
			}
			done, err := r.annotateForBaremetal(ctx, mhc, m, t.verdict.Reason)
			if done {
				pass.remediated(t, bk)
			}
			errs = append(errs, err)
		case remediateSkipNoController:
			r.machineEventOnce(key, m, corev1.EventTypeWarning, EventSkippedNoController,
				fmt.Sprintf("Not deleting Machine %s (%s): it has no controller owner to replace it", m.Name, t.verdict.Reason))
		case remediateDelete:
			bk := pass.ownerBackoffKey(metav1.GetControllerOf(m))
			if !pass.admit(t, bk) {
				continue
			}
			deleted, err := r.deleteMachine(ctx, mhc, m, t.verdict.Reason)
			if deleted {
				pass.remediated(t, bk)
			}
			errs = append(errs, err)
		}
	}
	return pass.done(), errors.Join(errs...)
}

// unhealthyOldestFirst returns the Unhealthy targets, the oldest Machine
// first (then by name): the order in which the pacing serves them.
func unhealthyOldestFirst(targets []target) []target {
	var out []target
	for _, t := range targets {
		if t.verdict.Health == Unhealthy {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b target) int {
		if c := a.machine.CreationTimestamp.Compare(b.machine.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.machine.Name, b.machine.Name)
	})
	return out
}

// deleteMachine deletes m (precondition: same UID) and records the outcome;
// deleted reports whether this call deleted it.
func (r *Reconciler) deleteMachine(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, m *machinev1beta1.Machine, why string) (deleted bool, err error) {
	ctrl.LoggerFrom(ctx).Info("deleting unhealthy Machine", "machine", m.Name, "reason", why)
	err = r.client.Delete(ctx, m, client.Preconditions{UID: &m.UID})
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
	ctrl.LoggerFrom(ctx).Info("MachineHealthCheck is invalid; not remediating", "error", msg)
	st := mhc.Status.DeepCopy()
	st.RemediationsAllowed = 0
	st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse,
		ReasonInvalidSpec, machinev1beta1.ConditionSeverityError, msg), now)
	return r.patchStatus(ctx, mhc, st, now)
}

// patchStatus writes st when it differs from mhc's status, and remembers
// the write until the cache shows it (package internal/readyourwrites).
func (r *Reconciler) patchStatus(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) error {
	readVersion := mhc.ResourceVersion
	if err := patch.SetStatus(ctx, r.client, r.apiReader, mhc, func(mhc *machinev1beta1.MachineHealthCheck) { mhc.Status = *st }); err != nil {
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
	return r.events.Once(mhc, m.Name, m, eventType, reason, "Remediate", note)
}

// setRestricted remembers whether mhc is short-circuited and reports whether
// that changed: RemediationRestricted is recorded once per transition even
// when the cache lags behind the persisted condition.
func (r *Reconciler) setRestricted(mhc types.NamespacedName, restricted bool) bool {
	if restricted {
		return r.events.First(mhc, "", restrictedMemo, "")
	}
	return r.events.Clear(mhc, "", restrictedMemo)
}

// restrictedMemo is the reason under which setRestricted remembers the
// short-circuit (no event has this reason).
const restrictedMemo = "short-circuited"
