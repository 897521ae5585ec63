package nodemaintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/drainer"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// Options configure a Reconciler.
type Options struct {
	// Client reads (through a cache with SetupWithManager's NodeNameField index) and writes. Default: the manager's.
	Client client.Client
	// KubeClient drains and writes nodes and leases; SetupWithManager builds one when nil.
	KubeClient kubernetes.Interface
	// Recorder (optional) receives events. Default: core/v1 Events from EventSource, as medik8s's.
	Recorder events.EventRecorder
	// APIReader (optional) reads uncached. Default: the manager's in SetupWithManager, else Client.
	APIReader client.Reader
	// Clock (optional) is the time source.
	Clock clock.PassiveClock
	// PollInterval (default DefaultPollInterval) paces a drain in progress and the first lease retry.
	PollInterval time.Duration
	// LeaseNamespace (default DefaultLeaseNamespace) holds the node leases.
	LeaseNamespace string
}

// withDefaults fills in the zero fields that need no manager (SetupWithManager fills in the others).
func (o Options) withDefaults() Options {
	o.Clock = cmp.Or[clock.PassiveClock](o.Clock, clock.RealClock{})
	o.PollInterval = cmp.Or(max(o.PollInterval, 0), DefaultPollInterval)
	o.LeaseNamespace = cmp.Or(o.LeaseNamespace, DefaultLeaseNamespace)
	return o
}

// Reconciler is the NodeMaintenance controller.
type Reconciler struct {
	opts   Options // defaulted
	events *patch.Events
	writes *readyourwrites.Memo
}

// NewReconciler returns a Reconciler; see Options for the defaults.
func NewReconciler(opts Options) *Reconciler {
	RegisterMetrics()
	opts = opts.withDefaults()
	return &Reconciler{
		opts:   opts,
		events: &patch.Events{Recorder: opts.Recorder},
		writes: readyourwrites.New(),
	}
}

// Reconcile drives one NodeMaintenance.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.opts.KubeClient == nil {
		return ctrl.Result{}, errors.New("the NodeMaintenance Reconciler has no Kubernetes clientset (Options.KubeClient)")
	}
	nm := &nmv1beta1.NodeMaintenance{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, nm); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Name)
			r.writes.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// A status computed from a cache behind our last write would be diffed against the wrong base (a
	// success then kept the pending pods and lastError of the write before): wait for the cache.
	if r.writes.Stale(req.NamespacedName, nm.ResourceVersion, r.opts.Clock.Now()) {
		return ctrl.Result{RequeueAfter: readyourwrites.CatchUpDelay}, nil
	}
	behind := []string{nm.ResourceVersion}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("node", nm.Spec.NodeName))

	if !nm.DeletionTimestamp.IsZero() {
		err := r.finalize(ctx, nm)
		// A reconcile reading the version before the finalizer went would release the node again.
		r.writes.WroteThrough(req.NamespacedName, behind, nm.ResourceVersion, r.opts.Clock.Now())
		return ctrl.Result{}, err
	}
	if !controllerutil.ContainsFinalizer(nm, Finalizer) {
		base := nm.DeepCopy()
		controllerutil.AddFinalizer(nm, Finalizer)
		if err := r.opts.Client.Patch(ctx, nm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
		r.events.Eventf(nm, nil, corev1.EventTypeNormal, EventBeginMaintenance, "Maintain", "%s", EventMessageBeginMaintenance)
		behind = append(behind, nm.ResourceVersion)
	}

	st := *nm.Status.DeepCopy()
	res, err := r.maintain(ctx, nm, &st)
	perr := r.writeStatus(ctx, nm, st)
	r.writes.WroteThrough(req.NamespacedName, behind, nm.ResourceVersion, r.opts.Clock.Now())
	if perr != nil {
		return ctrl.Result{}, errors.Join(err, perr)
	}
	return res, err
}

// maintain computes the new status into st and does the node work.
func (r *Reconciler) maintain(ctx context.Context, nm *nmv1beta1.NodeMaintenance, st *nmv1beta1.NodeMaintenanceStatus) (ctrl.Result, error) {
	nodeName := nm.Spec.NodeName
	if st.Phase == "" { // medik8s's first reconcile counts before it looks at the node or its lease
		if err := r.countPods(ctx, nodeName, st); err != nil {
			return ctrl.Result{}, err
		}
	}
	node := &corev1.Node{}
	if err := r.opts.Client.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) { // the Node watch brings us back; a node that comes back is drained afresh
			return r.nodeApplied(st, nodeName, err)
		}
		return ctrl.Result{}, fmt.Errorf("getting node %s: %w", nodeName, err)
	}

	siblings := &nmv1beta1.NodeMaintenanceList{}
	if err := r.opts.Client.List(ctx, siblings, client.MatchingFields{NodeNameField: nodeName}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing NodeMaintenances of node %s: %w", nodeName, err)
	}
	if !slices.ContainsFunc(siblings.Items, func(o nmv1beta1.NodeMaintenance) bool { return o.Name == nm.Name }) {
		siblings.Items = append(siblings.Items, *nm)
	}
	if first := owner(siblings.Items, nodeName, node.Annotations[OwnerAnnotation]); first != nil && first.Name != nm.Name {
		// The NodeMaintenance watch brings us back when the first one goes.
		return r.nodeApplied(st, nodeName, &heldError{node: nodeName, owner: first.Name})
	}

	// The node lease first: nothing is done to the node without it.
	leaseRes, proceed, err := r.leaseStep(ctx, nm, node, st)
	if err != nil || !proceed {
		return leaseRes, err
	}
	res, err := r.maintainNode(ctx, nm, node, st)
	return soonest(res, leaseRes), err
}

// maintainNode cordons, taints, labels and drains the node (the lease held).
func (r *Reconciler) maintainNode(ctx context.Context, nm *nmv1beta1.NodeMaintenance, node *corev1.Node, st *nmv1beta1.NodeMaintenanceStatus) (ctrl.Result, error) {
	nodeName := node.Name
	if st.Phase == nmv1beta1.MaintenanceSucceeded {
		// Drained: keep the node as maintenance wants it, never drain again.
		return r.nodeApplied(st, nodeName, r.applyNode(ctx, nodeName, nm.Name))
	}
	if st.Phase != nmv1beta1.MaintenanceRunning {
		st.Phase, st.LastError = nmv1beta1.MaintenanceRunning, ""
	}

	list, errs := drainer.NewHelper(ctx, r.opts.KubeClient, log.FromContext(ctx)).GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		st.LastError = patch.Truncate("cannot list the pods to evict: "+strings.Join(msgs, "; "), 1024)
		return ctrl.Result{}, fmt.Errorf("listing pods of node %s: %w", nodeName, errors.Join(errs...))
	}
	pods := list.Pods()

	if nodeutil.IsControlPlane(node) {
		pdbs, err := r.opts.KubeClient.PolicyV1().PodDisruptionBudgets(nodeutil.EtcdNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("listing PodDisruptionBudgets in %s: %w", nodeutil.EtcdNamespace, err)
		}
		if msg := etcdGuardBlock(node, pods, pdbs.Items); msg != "" {
			st.LastError = msg
			return ctrl.Result{RequeueAfter: r.opts.PollInterval}, nil // PDB status is not watched
		}
	}

	if res, err := r.nodeApplied(st, nodeName, r.applyNode(ctx, nodeName, nm.Name)); err != nil || st.Phase == nmv1beta1.MaintenanceFailed {
		return res, err
	}

	if st.DrainStartTime == nil {
		st.DrainStartTime = ptr.To(metav1.NewTime(r.opts.Clock.Now()))
	}
	return r.drainPass(ctx, nm, st, pods)
}

// countPods starts the status as medik8s's first reconcile does: Running, the pods to evict pending
// (drainProgress still 0: the drain has not started) and counted, with every pod of the node.
func (r *Reconciler) countPods(ctx context.Context, nodeName string, st *nmv1beta1.NodeMaintenanceStatus) error {
	st.Phase = nmv1beta1.MaintenanceRunning
	list, errs := drainer.NewHelper(ctx, r.opts.KubeClient, log.FromContext(ctx)).GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		st.LastError = initCountError
		return fmt.Errorf("listing the pods to evict from node %s: %w", nodeName, errors.Join(errs...))
	}
	all, err := r.opts.KubeClient.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		st.LastError = err.Error() // medik8s's: the bare error
		return fmt.Errorf("listing pods of node %s: %w", nodeName, err)
	}
	pendingStatus(st, list.Pods())
	st.EvictionPods, st.TotalPods, st.DrainProgress = len(list.Pods()), len(all.Items), 0
	return nil
}

// nodeApplied turns the outcome of applyNode into the status: a vanished
// node or one held by another maintenance fails this one (until a watch wakes it).
func (r *Reconciler) nodeApplied(st *nmv1beta1.NodeMaintenanceStatus, nodeName string, err error) (ctrl.Result, error) {
	var held *heldError
	switch {
	case err == nil:
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		// medik8s's text: the API server's NotFound message.
		st.Phase, st.LastError, st.DrainStartTime = nmv1beta1.MaintenanceFailed, fmt.Sprintf("nodes %q not found", nodeName), nil
		return ctrl.Result{}, nil
	case errors.As(err, &held):
		st.Phase, st.LastError = nmv1beta1.MaintenanceFailed, held.Error()
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// finalize releases the node, the lease (unless another NodeMaintenance of the node keeps it) and the finalizer.
func (r *Reconciler) finalize(ctx context.Context, nm *nmv1beta1.NodeMaintenance) error {
	if !controllerutil.ContainsFinalizer(nm, Finalizer) {
		forgetMetrics(nm.Name)
		return nil
	}
	node, err := r.releaseNode(ctx, nm)
	if err != nil {
		return err
	}
	if node != nil {
		r.events.Eventf(node, nil, corev1.EventTypeNormal, EventUncordonNode, "Release", "%s", EventMessageUncordonNode)
	}
	others := &nmv1beta1.NodeMaintenanceList{}
	if err := r.opts.Client.List(ctx, others, client.MatchingFields{NodeNameField: nm.Spec.NodeName}); err != nil {
		return fmt.Errorf("listing NodeMaintenances of node %s: %w", nm.Spec.NodeName, err)
	}
	if !slices.ContainsFunc(others.Items, func(o nmv1beta1.NodeMaintenance) bool {
		return o.Name != nm.Name && o.Spec.NodeName == nm.Spec.NodeName && o.DeletionTimestamp.IsZero()
	}) {
		if err := r.releaseLease(ctx, nm.Spec.NodeName); err != nil {
			return err
		}
	}
	base := nm.DeepCopy()
	controllerutil.RemoveFinalizer(nm, Finalizer)
	if err := r.opts.Client.Patch(ctx, nm, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the finalizer: %w", err))
	}
	r.events.Eventf(nm, nil, corev1.EventTypeNormal, EventRemovedMaintenance, "Release", "%s", EventMessageRemovedMaintenance)
	forgetMetrics(nm.Name)
	return nil
}

// statusFields: the controller is the status's only writer (docs/architecture.md, "Status writes and events").
var statusFields = patch.Fields{Manager: ControllerName, All: true}

// writeStatus patches the status when it changed (lastUpdate aside), and
// records phase events and metrics.
func (r *Reconciler) writeStatus(ctx context.Context, nm *nmv1beta1.NodeMaintenance, st nmv1beta1.NodeMaintenanceStatus) error {
	old := nm.Status
	if statusEqual(old, st) {
		setPhaseMetric(nm.Name, st.Phase)
		return nil
	}
	st.LastUpdate = ptr.To(metav1.NewTime(r.opts.Clock.Now()))
	if err := patch.SetStatus(ctx, r.opts.Client, nm, func(nm *nmv1beta1.NodeMaintenance) { nm.Status = st }, statusFields); err != nil {
		return client.IgnoreNotFound(err)
	}
	setPhaseMetric(nm.Name, st.Phase)
	if st.Phase != old.Phase && st.Phase != "" {
		PhaseTransitionsTotal.WithLabelValues(string(st.Phase)).Inc()
	}
	switch {
	case st.Phase == nmv1beta1.MaintenanceFailed && (old.Phase != st.Phase || old.LastError != st.LastError):
		r.events.Eventf(nm, nil, corev1.EventTypeWarning, EventFailedMaintenance, "Maintain", "%s", EventMessageFailedMaintenance)
	case st.Phase == nmv1beta1.MaintenanceSucceeded && old.Phase != st.Phase:
		r.events.Eventf(nm, nil, corev1.EventTypeNormal, EventSucceedMaintenance, "Maintain", "%s", EventMessageSucceedMaintenance)
	case st.Phase == nmv1beta1.MaintenanceRunning && st.LastError != "" && old.LastError != st.LastError &&
		(strings.HasPrefix(st.LastError, "waiting") || strings.HasPrefix(st.LastError, leaseWaitMessage)):
		r.events.Eventf(nm, nil, corev1.EventTypeNormal, EventWaiting, "Maintain", "%s", st.LastError)
	}
	return nil
}
