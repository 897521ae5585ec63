package machinedeployment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/deletepolicy"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// Options configure a Reconciler.
type Options struct {
	// Namespace (optional) restricts the controller to one namespace.
	Namespace string
	// Client reads through a cache with SetupWithManager's IndexMachineController index, and writes. Default: the manager's.
	Client client.Client
	// APIReader reads uncached (before adopting). Default: the manager's.
	APIReader client.Reader
	// Recorder (optional) receives events. Default: the manager's, named ControllerName.
	Recorder events.EventRecorder
	// Clock (optional) is the time source.
	Clock clock.PassiveClock
}

// withDefaults fills in the zero fields that need no manager (SetupWithManager fills in the others).
func (o Options) withDefaults() Options {
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	return o
}

// Reconciler is the MachineDeployment controller.
type Reconciler struct {
	opts   Options // defaulted
	events *patch.Events
}

// NewReconciler returns a MachineDeployment controller; it registers the metrics.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	opts = opts.withDefaults()
	return &Reconciler{opts: opts, events: &patch.Events{Recorder: opts.Recorder}}
}

// Reconcile drives one MachineDeployment one step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.opts.Namespace != "" && req.Namespace != r.opts.Namespace {
		return ctrl.Result{}, nil
	}
	md := &mdv1beta1.MachineDeployment{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, md); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading MachineDeployment %s: %w", req.NamespacedName, err)
	}
	if md.DeletionTimestamp != nil { // the garbage collector deletes the MachineSets
		return ctrl.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&md.Spec.Selector)
	switch {
	case err != nil || sel.Empty():
		return ctrl.Result{}, r.refuse(ctx, md, EventSelectingAll,
			"This MachineDeployment's selector is empty or invalid: nothing is done; set spec.selector to match the template's labels")
	case !sel.Matches(labels.Set(md.Spec.Template.Labels)): // else each pass would make another MachineSet
		return ctrl.Result{}, r.refuse(ctx, md, EventInvalidConfiguration,
			"spec.selector does not match spec.template.metadata.labels: nothing is done; make the template's labels match the selector")
	}

	sets, err := r.claimSets(ctx, md, sel)
	if err != nil {
		return ctrl.Result{}, err
	}
	states, err := r.observe(ctx, sets)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := Decide(md, states, r.opts.Clock.Now())
	if err := r.act(ctx, md, states, &plan); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// refuse leaves an invalid MachineDeployment alone: one Warning event per
// generation, observedGeneration set.
func (r *Reconciler) refuse(ctx context.Context, md *mdv1beta1.MachineDeployment, reason, msg string) error {
	if md.Status.ObservedGeneration == md.Generation {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("MachineDeployment is invalid; not rolling it out", "reason", msg)
	r.events.Eventf(md, nil, corev1.EventTypeWarning, reason, "Validate", "%s", msg)
	st := *md.Status.DeepCopy()
	st.ObservedGeneration = md.Generation
	return r.patchStatus(ctx, md, st)
}

// claimSets returns the MachineSets md controls, adopting matching orphans
// and releasing owned sets whose labels stopped matching (Deployments' rules).
func (r *Reconciler) claimSets(ctx context.Context, md *mdv1beta1.MachineDeployment, sel labels.Selector) ([]*machinev1beta1.MachineSet, error) {
	list := &machinev1beta1.MachineSetList{}
	if err := r.opts.Client.List(ctx, list, client.InNamespace(md.Namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineSets of MachineDeployment %s/%s: %w", md.Namespace, md.Name, err)
	}
	var owned, orphans []*machinev1beta1.MachineSet
	var errs []error
	for i := range list.Items {
		ms := &list.Items[i]
		ref := metav1.GetControllerOfNoCopy(ms)
		matches := sel.Matches(labels.Set(ms.Labels))
		switch {
		case ref != nil && ref.UID == md.UID && matches:
			owned = append(owned, ms)
		case ref != nil && ref.UID == md.UID && ms.DeletionTimestamp == nil:
			errs = append(errs, r.setOwner(ctx, ms, md, false))
		case ref == nil && matches && ms.DeletionTimestamp == nil:
			orphans = append(orphans, ms)
		}
	}
	if len(orphans) > 0 { // re-read uncached: a deleted or replaced deployment adopts nothing
		fresh := &mdv1beta1.MachineDeployment{}
		if err := r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(md), fresh); err != nil {
			return nil, fmt.Errorf("re-reading MachineDeployment before adopting MachineSets: %w", err)
		}
		if fresh.UID != md.UID || fresh.DeletionTimestamp != nil {
			return nil, fmt.Errorf("not adopting MachineSets: MachineDeployment %s/%s was replaced or is being deleted", md.Namespace, md.Name)
		}
	}
	for _, ms := range orphans {
		if err := r.setOwner(ctx, ms, md, true); err != nil {
			errs = append(errs, err)
			continue
		}
		owned = append(owned, ms)
	}
	return owned, errors.Join(errs...) // a failed claim: no decision until it works
}

// setOwner adds (adopt) or removes md's controller reference on ms, under an
// optimistic lock (a concurrent claim wins).
func (r *Reconciler) setOwner(ctx context.Context, ms *machinev1beta1.MachineSet, md *mdv1beta1.MachineDeployment, adopt bool) error {
	upd := ms.DeepCopy()
	if adopt {
		upd.OwnerReferences = append(upd.OwnerReferences, *metav1.NewControllerRef(md, machineDeploymentKind))
	} else {
		upd.OwnerReferences = slices.DeleteFunc(upd.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == md.UID })
	}
	if err := r.opts.Client.Patch(ctx, upd, client.MergeFromWithOptions(ms, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("claiming MachineSet %s (adopt=%t): %w", ms.Name, adopt, err))
	}
	ctrl.LoggerFrom(ctx).V(2).Info("claimed MachineSet", "machineset", ms.Name, "adopt", adopt)
	*ms = *upd
	return nil
}

// observe counts each set's Machines (cached): availability in the set's
// delete order, readiness, deletions and Nodes.
func (r *Reconciler) observe(ctx context.Context, sets []*machinev1beta1.MachineSet) ([]SetState, error) {
	now := r.opts.Clock.Now()
	out := make([]SetState, 0, len(sets))
	for _, ms := range sets {
		list := &machinev1beta1.MachineList{}
		if err := r.opts.Client.List(ctx, list, client.InNamespace(ms.Namespace),
			client.MatchingFields{IndexMachineController: string(ms.UID)}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing Machines of MachineSet %s: %w", ms.Name, err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&ms.Spec.Selector)
		if err != nil {
			sel = labels.Nothing()
		}
		st := SetState{Set: ms}
		var active []*machinev1beta1.Machine
		for i := range list.Items {
			m := &list.Items[i]
			switch {
			case m.DeletionTimestamp != nil:
				st.Deleting++
			case sel.Matches(labels.Set(m.Labels)):
				active = append(active, m)
			}
		}
		minReady := time.Duration(ms.Spec.MinReadySeconds) * time.Second
		for _, m := range deletepolicy.MachinesToDelete(machinev1beta1.MachineSetDeletePolicy(ms.Spec.DeletePolicy), active, len(active)) {
			available := false
			if m.Status.NodeRef != nil && m.Status.NodeRef.Name != "" {
				st.Nodes = append(st.Nodes, m.Status.NodeRef.Name)
				n := &corev1.Node{}
				err := r.opts.Client.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, n, client.UnsafeDisableDeepCopy)
				if c := nodeutil.ReadyCondition(n); err == nil && c != nil && c.Status == corev1.ConditionTrue {
					st.Ready++
					available = !now.Before(c.LastTransitionTime.Add(minReady))
				}
			}
			st.Available = append(st.Available, available)
		}
		out = append(out, st)
	}
	return out, nil
}
