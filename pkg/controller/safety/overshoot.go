package safety

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/freeze"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// OvershootController freezes MachineSets (and their MachineDeployment) backed by too
// many Machines (decideOvershoot), on their and their Machines' changes and every Period.
type OvershootController struct {
	client    client.Client
	apiReader client.Reader
	events    *patch.Events
	opts      OvershootOptions
	namespace string
	clock     clock.PassiveClock
}

// NewOvershootController returns the overshoot freeze for namespace's
// MachineSets (empty: all); invalid options become the defaults.
func NewOvershootController(opts OvershootOptions, namespace string) *OvershootController {
	if opts.Validate() != nil {
		opts = DefaultOvershootOptions()
	}
	return &OvershootController{opts: opts, namespace: namespace, clock: clock.RealClock{}, events: &patch.Events{}}
}

// Reconcile evaluates one MachineSet, then its MachineDeployment: observe,
// decide, act, report.
func (c *OvershootController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if c.namespace != "" && req.Namespace != c.namespace {
		return ctrl.Result{}, nil
	}
	v, err := c.observe(ctx, req.NamespacedName)
	if v == nil || err != nil {
		return ctrl.Result{}, err
	}
	if v.mdUnfreeze { // as machine-controller-manager: the request reaches every set
		if err := c.propagateUnfreeze(ctx, v.siblings, v.ms.UID); err != nil {
			return ctrl.Result{}, err
		}
	}
	marks := marksOf(v.ms.Labels, v.ms.Status.Conditions)
	_, unfreeze := v.ms.Annotations[UnfreezeAnnotation]
	d := decideOvershoot(v.ms.Name, v.count, v.th, marks, unfreeze || v.mdUnfreeze, v.settled)
	ctrl.LoggerFrom(ctx).V(4).Info("overshoot check", "machines", v.count, "high", v.th.high, "low", v.th.low, "frozen", marks.frozen(), "settled", v.settled)
	if d.frozen && !marks.frozen() { // rare: confirm the count uncached (the cache may lag)
		machines, err := listMachines(ctx, c.apiReader, client.InNamespace(v.ms.Namespace))
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("listing the Machines of MachineSet %s uncached: %w", v.ms.Name, err)
		}
		v.count = countMachines(v.ms, machines)
		d = decideOvershoot(v.ms.Name, v.count, v.th, marks, unfreeze || v.mdUnfreeze, v.settled)
	}

	err = c.applyAndReport(ctx, v.ms, d, marks, "MachineSet", EventFrozeMachineSet, EventUnfrozeMachineSet)
	if v.md != nil {
		anyFrozen := d.frozen || slices.ContainsFunc(v.siblings, func(s *machinev1beta1.MachineSet) bool {
			return s.UID != v.ms.UID && freeze.MachineSetFrozen(s)
		})
		mdMarks := marksOf(v.md.Labels, v.md.Status.Conditions)
		mdd := decideDeployment(v.md.Name, anyFrozen, d, d.frozen && !marks.frozen(), v.mdUnfreeze)
		err = errors.Join(err, c.applyAndReport(ctx, v.md, mdd, mdMarks, "MachineDeployment", EventFrozeMachineDeployment, EventUnfrozeMachineDeployment))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !v.settled { // the set controller's status write is not watched: look again soon
		return ctrl.Result{RequeueAfter: min(c.opts.Period, unsettledRecheck)}, nil
	}
	return ctrl.Result{RequeueAfter: c.opts.Period}, nil
}

// unsettledRecheck is how soon an unsettled set is evaluated again.
const unsettledRecheck = 2 * time.Second

// overshootView is what one evaluation observes: md controls ms (nil: standalone),
// siblings are md's sets (ms included); settled: their controllers saw the latest specs.
type overshootView struct {
	ms         *machinev1beta1.MachineSet
	md         *mdv1beta1.MachineDeployment
	siblings   []*machinev1beta1.MachineSet
	mdUnfreeze bool
	settled    bool
	count      int64
	th         thresholds
}

// observe reads the set, its MachineDeployment and that one's sets, and
// counts the set's Machines, all cached; nil when the set is gone or going.
func (c *OvershootController) observe(ctx context.Context, key types.NamespacedName) (*overshootView, error) {
	v := &overshootView{ms: &machinev1beta1.MachineSet{}}
	if err := c.client.Get(ctx, key, v.ms); err != nil || v.ms.DeletionTimestamp != nil {
		return nil, client.IgnoreNotFound(err)
	}
	v.settled = v.ms.Status.ObservedGeneration >= v.ms.Generation
	var err error
	if v.md, err = c.owningDeployment(ctx, v.ms); err != nil {
		return nil, err
	}
	if v.md != nil {
		if v.siblings, err = c.setsOf(ctx, v.md); err != nil {
			return nil, err
		}
		_, v.mdUnfreeze = v.md.Annotations[UnfreezeAnnotation]
		v.settled = v.settled && v.md.Status.ObservedGeneration >= v.md.Generation
	}
	machines, err := listMachines(ctx, c.client, client.InNamespace(v.ms.Namespace),
		client.MatchingFields{IndexMachineSetOwnerName: v.ms.Name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("listing the Machines of MachineSet %s: %w", v.ms.Name, err)
	}
	v.count = countMachines(v.ms, machines)
	if v.th, err = overshootThresholds(int64(ptr.Deref(v.ms.Spec.Replicas, 1)), v.md, c.opts.SafetyUp, c.opts.SafetyDown); err != nil {
		return nil, err
	}
	return v, nil
}

// applyAndReport writes d on obj when it changes anything, then records the
// event and log line of the change.
func (c *OvershootController) applyAndReport(ctx context.Context, obj client.Object, d freezeDecision, before freezeMarks, kind, froze, unfroze string) error {
	if !d.changes(before) && !d.clearUnfreeze {
		return nil
	}
	if err := c.apply(ctx, obj, d); err != nil {
		return fmt.Errorf("applying the freeze decision to %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	log := ctrl.LoggerFrom(ctx)
	switch {
	case d.frozen && !before.frozen():
		log.Info("froze "+kind+": it creates no Machines until the count falls back", "name", obj.GetName(), "reason", d.reason, "message", d.message)
		c.events.Eventf(obj, nil, corev1.EventTypeWarning, froze, "Freeze", "%s", d.message)
	case !d.frozen && before.frozen():
		log.Info("unfroze "+kind, "name", obj.GetName(), "reason", d.reason, "message", d.message)
		c.events.Eventf(obj, nil, corev1.EventTypeNormal, unfroze, "Unfreeze", "%s: %s", d.reason, d.message)
	}
	return nil
}

// statusFields are the MachineSet and MachineDeployment status fields the safety controller owns: Frozen
// (docs/architecture.md, "Status writes and events").
var statusFields = patch.Fields{Manager: ControllerName, Conditions: []string{string(mdv1beta1.FrozenCondition)}}

// apply writes d on obj (a *MachineSet or *MachineDeployment): the Frozen
// condition, then the label and the annotation, each patched only when it differs.
func (c *OvershootController) apply(ctx context.Context, obj client.Object, d freezeDecision) error {
	base, _ := obj.DeepCopyObject().(client.Object)
	upd, _ := obj.DeepCopyObject().(client.Object)
	updConds, err := conditionsOf(upd) // fails for any other type
	if err != nil {
		return err
	}
	switch {
	case d.frozen && conditions.IsTrue(*updConds, mdv1beta1.FrozenCondition): // the first freeze's reason stays
	case d.frozen:
		frozen := conditions.New(mdv1beta1.FrozenCondition, corev1.ConditionTrue, d.reason, "", d.message)
		*updConds = conditions.Set(*updConds, frozen, c.clock.Now())
	default:
		*updConds = conditions.Remove(*updConds, mdv1beta1.FrozenCondition)
	}
	if _, err := patch.ApplyStatus(ctx, c.client, base, upd, statusFields); err != nil {
		return fmt.Errorf("writing the Frozen condition: %w", err)
	}
	withLabel, _ := upd.DeepCopyObject().(client.Object)
	if d.frozen {
		withLabel.SetLabels(labels.Merge(withLabel.GetLabels(), labels.Set{mdv1beta1.FreezeLabel: mdv1beta1.FreezeLabelValue}))
	} else {
		delete(withLabel.GetLabels(), mdv1beta1.FreezeLabel)
	}
	if d.clearUnfreeze {
		delete(withLabel.GetAnnotations(), UnfreezeAnnotation)
	}
	if maps.Equal(withLabel.GetLabels(), upd.GetLabels()) && maps.Equal(withLabel.GetAnnotations(), upd.GetAnnotations()) {
		return nil
	}
	if err := c.client.Patch(ctx, withLabel, client.MergeFrom(upd)); err != nil {
		return fmt.Errorf("patching the %s label: %w", mdv1beta1.FreezeLabel, err)
	}
	return nil
}

// conditionsOf returns a pointer to a MachineSet's or MachineDeployment's conditions.
func conditionsOf(obj client.Object) (*[]machinev1beta1.Condition, error) {
	switch o := obj.(type) {
	case *machinev1beta1.MachineSet:
		return &o.Status.Conditions, nil
	case *mdv1beta1.MachineDeployment:
		return &o.Status.Conditions, nil
	}
	return nil, fmt.Errorf("no Frozen condition on a %T", obj)
}

// propagateUnfreeze puts UnfreezeAnnotation on the frozen sets but self
// (each clears it when it thaws).
func (c *OvershootController) propagateUnfreeze(ctx context.Context, sets []*machinev1beta1.MachineSet, self types.UID) error {
	for _, s := range sets {
		if _, ok := s.Annotations[UnfreezeAnnotation]; ok || s.UID == self || !freeze.MachineSetFrozen(s) {
			continue
		}
		upd := s.DeepCopy()
		metav1.SetMetaDataAnnotation(&upd.ObjectMeta, UnfreezeAnnotation, mdv1beta1.FreezeLabelValue)
		if err := c.client.Patch(ctx, upd, client.MergeFrom(s)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("propagating %s to MachineSet %s: %w", UnfreezeAnnotation, s.Name, err)
		}
	}
	return nil
}

// owningDeployment returns the MachineDeployment controlling ms (nil: none, or no such API).
func (c *OvershootController) owningDeployment(ctx context.Context, ms *machinev1beta1.MachineSet) (*mdv1beta1.MachineDeployment, error) {
	ref := metav1.GetControllerOfNoCopy(ms)
	if ref == nil || ref.Kind != "MachineDeployment" {
		return nil, nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != mdv1beta1.GroupVersion.Group {
		return nil, nil
	}
	md := &mdv1beta1.MachineDeployment{}
	err := c.client.Get(ctx, types.NamespacedName{Namespace: ms.Namespace, Name: ref.Name}, md)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading MachineDeployment %s of MachineSet %s: %w", ref.Name, ms.Name, err)
	case md.UID != ref.UID:
		return nil, nil
	}
	return md, nil
}

// setsOf lists md's MachineSets (controller reference) from the cache.
func (c *OvershootController) setsOf(ctx context.Context, md *mdv1beta1.MachineDeployment) ([]*machinev1beta1.MachineSet, error) {
	list := &machinev1beta1.MachineSetList{}
	if err := c.client.List(ctx, list, client.InNamespace(md.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the MachineSets of MachineDeployment %s: %w", md.Name, err)
	}
	var out []*machinev1beta1.MachineSet
	for i := range list.Items {
		if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil && ref.UID == md.UID {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
