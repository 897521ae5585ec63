// Package nodelink links each Node to its Machine (status.nodeRef, never cleared) and keeps the Machine's
// spec.metadata and spec.taints on the Node, removing only what it recorded (docs/architecture.md, "Nodelink").
package nodelink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	kptr "k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/readyourwrites"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/updates"
)

// ControllerName names the controller (logs, metrics, events).
const ControllerName = "nodelink-controller"

// Warning event reasons.
const (
	// ReasonAmbiguousMatch (on the Node): more than one Machine matches; nothing is linked.
	ReasonAmbiguousMatch = "AmbiguousMachineMatch"
	// ReasonInvalidNodeMetadata (on the Machine): metadata a Node cannot carry is skipped.
	ReasonInvalidNodeMetadata = "InvalidNodeMetadata"
	// ReasonInvalidLastApplied (on the Node): the record is unreadable; nothing is removed.
	ReasonInvalidLastApplied = "InvalidLastApplied"
)

// StatusFields are the Machine status fields nodelink owns: nodeRef, which it alone writes (docs/architecture.md).
var StatusFields = patch.Fields{Manager: ControllerName, Keys: []string{"nodeRef"}}

// conflictRetry: a write that hit a conflict (a stale cache) is retried this soon.
const conflictRetry = 500 * time.Millisecond

// Options configure a Reconciler.
type Options struct {
	Client    client.Client        // reads a cache with RegisterIndexes' indexes (default: the manager's)
	Namespace string               // holds the Machines; empty means every namespace
	Recorder  events.EventRecorder // records events (default: the manager's; none without one)
}

// Reconciler links Nodes and Machines. Requests are keyed by Node name.
type Reconciler struct {
	opts   Options
	events *patch.Events
	// Our nodeRef and Node patches the cache has not shown yet.
	nodeRefs, nodePatches writes
}

// writes remembers one kind of our writes the cache has not shown yet, by the
// version left behind and by the value (another writer's version may land between).
type writes struct {
	memo *readyourwrites.Memo
	sent *readyourwrites.Sent
}

// send calls write unless the cache, which shows key at version, is behind
// our last write of value; write returns the version written ("": none).
func (w writes) send(key types.NamespacedName, version, value string, write func() (string, error)) error {
	now := time.Now()
	if w.memo.Stale(key, version, now) {
		return errCacheBehind
	}
	if w.sent.Pending(key, value, now) {
		return errSentPending
	}
	written, err := write()
	if err != nil || written == "" {
		return err
	}
	w.memo.Wrote(key, version, written, now)
	w.sent.Note(key, value, now)
	return nil
}

// NewReconciler returns a Reconciler.
func NewReconciler(opts Options) *Reconciler {
	return &Reconciler{
		opts:        opts,
		events:      &patch.Events{Recorder: opts.Recorder},
		nodeRefs:    writes{readyourwrites.New(), readyourwrites.NewSent()},
		nodePatches: writes{readyourwrites.New(), readyourwrites.NewSent()},
	}
}

// SetupWithManager registers the indexes and the controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.opts.Client == nil {
		r.opts.Client = mgr.GetClient()
	}
	if r.events.Recorder == nil {
		r.events.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if err := RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(updates.Matter(nodeChanged))).
		Watches(&machinev1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.nodeRequestsForMachine),
			builder.WithPredicates(updates.Matter(machineChanged))).
		WithOptions(opts).
		Complete(r)
}

// Reconcile links the Node req.Name to its Machine and syncs its metadata. A
// Node that is gone changes nothing: the Machines naming it keep their nodeRef.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("node", req.Name)
	ctx = log.IntoContext(ctx, logger)

	node := &corev1.Node{}
	if err := r.opts.Client.Get(ctx, types.NamespacedName{Name: req.Name}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
		}
		r.nodePatches.memo.Forget(req.NamespacedName)
		r.nodePatches.sent.Forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if node.DeletionTimestamp != nil {
		logger.V(4).Info("node is being deleted, skipping")
		return reconcile.Result{}, nil
	}

	machine, kind, candidates, err := r.findMachine(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch kind {
	case matchNone:
		logger.V(2).Info("no machine matches the node")
		return reconcile.Result{}, nil
	case matchDeleting:
		logger.V(2).Info("not linking: the matching machines are being deleted and had another node (or none)", "machines", machineKeys(candidates))
		return reconcile.Result{}, nil
	case matchAmbiguous:
		keys := machineKeys(candidates)
		logger.Error(nil, "more than one machine matches the node, not linking", "machines", keys)
		r.events.Eventf(node, nil, corev1.EventTypeWarning, ReasonAmbiguousMatch, "Link",
			"%d machines match node %s (%s): not linking any; give each machine a unique providerID or InternalIP", len(keys), node.Name, strings.Join(keys, ", "))
		return reconcile.Result{}, nil
	}
	logger = logger.WithValues("machine", machine.Namespace+"/"+machine.Name, "matchedBy", string(kind))
	ctx = log.IntoContext(ctx, logger)

	err = r.setNodeRef(ctx, machine, node)
	if err == nil {
		err = r.syncNode(ctx, node, machine)
	}
	switch {
	case errors.Is(err, errSentPending):
		return reconcile.Result{RequeueAfter: sentPendingRetry}, nil
	case errors.Is(err, errCacheBehind):
		return reconcile.Result{RequeueAfter: readyourwrites.CatchUpDelay}, nil
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// findMachine looks the Node's Machine up by providerID, then by InternalIP.
func (r *Reconciler) findMachine(ctx context.Context, node *corev1.Node) (*machinev1beta1.Machine, matchKind, []*machinev1beta1.Machine, error) {
	var byProviderID []*machinev1beta1.Machine
	if id := node.Spec.ProviderID; id != "" {
		ms, err := r.listMachines(ctx, IndexMachineProviderID, id)
		if err != nil {
			return nil, "", nil, err
		}
		byProviderID = ms
	}
	var byIP []*machinev1beta1.Machine
	if len(byProviderID) == 0 {
		seen := map[types.NamespacedName]bool{}
		for _, ip := range internalIPs(node.Status.Addresses) {
			ms, err := r.listMachines(ctx, IndexMachineInternalIP, ip)
			if err != nil {
				return nil, "", nil, err
			}
			for _, m := range ms {
				key := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
				if seen[key] {
					continue
				}
				seen[key] = true
				claimed, err := r.providerIDClaimedElsewhere(ctx, m, node)
				if err != nil {
					return nil, "", nil, err
				}
				if claimed {
					log.FromContext(ctx).V(2).Info("machine shares an InternalIP with the node but its providerID belongs to another node", "machine", key.String())
					continue
				}
				byIP = append(byIP, m)
			}
		}
	}
	m, kind, candidates := pickMachine(node, byProviderID, byIP)
	return m, kind, candidates, nil
}

// providerIDClaimedElsewhere reports whether m's providerID is another Node's.
func (r *Reconciler) providerIDClaimedElsewhere(ctx context.Context, m *machinev1beta1.Machine, node *corev1.Node) (bool, error) {
	id := machineProviderID(m)
	if id == "" {
		return false, nil
	}
	nodes, err := r.listNodes(ctx, machinenode.IndexNodeProviderID, id)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(nodes, func(n string) bool { return n != node.Name }), nil
}

func (r *Reconciler) listMachines(ctx context.Context, index, value string) ([]*machinev1beta1.Machine, error) {
	list := &machinev1beta1.MachineList{}
	if err := r.opts.Client.List(ctx, list, client.MatchingFields{index: value}, client.InNamespace(r.opts.Namespace)); err != nil {
		return nil, fmt.Errorf("listing machines by %s=%s: %w", index, value, err)
	}
	out := make([]*machinev1beta1.Machine, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func (r *Reconciler) listNodes(ctx context.Context, index, value string) ([]string, error) {
	list := &corev1.NodeList{}
	if err := r.opts.Client.List(ctx, list, client.MatchingFields{index: value}); err != nil {
		return nil, fmt.Errorf("listing nodes by %s=%s: %w", index, value, err)
	}
	out := make([]string, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].Name)
	}
	return out, nil
}

var (
	errCacheBehind = errors.New("the machine cache has not caught up with our last write")
	errSentPending = errors.New("the cache has not shown our last write yet")
)

// sentPendingRetry is a fallback (our write's event wakes the reconcile),
// long enough not to spin while a loaded API server's watch lags.
const sentPendingRetry = time.Second

func (r *Reconciler) setNodeRef(ctx context.Context, machine *machinev1beta1.Machine, node *corev1.Node) error {
	key := client.ObjectKeyFromObject(machine)
	if nodeRefUpToDate(machine, node) {
		r.nodeRefs.sent.Forget(key)
		return nil
	}
	return r.nodeRefs.send(key, machine.ResourceVersion, string(node.UID), func() (string, error) {
		m := machine.DeepCopy()
		ref := machinenode.NodeRef(node)
		m.Status.NodeRef = &ref
		if _, err := patch.ApplyStatus(ctx, r.opts.Client, machine, m, StatusFields); err != nil {
			if apierrors.IsNotFound(err) {
				return "", nil // the Machine finished deleting meanwhile
			}
			return "", fmt.Errorf("setting nodeRef of machine %s/%s: %w", m.Namespace, m.Name, err)
		}
		log.FromContext(ctx).Info("set nodeRef", "nodeUID", node.UID)
		return m.ResourceVersion, nil
	})
}

func (r *Reconciler) syncNode(ctx context.Context, node *corev1.Node, machine *machinev1beta1.Machine) error {
	logger := log.FromContext(ctx)
	last, err := parseLastApplied(node)
	if err != nil {
		logger.Error(err, "ignoring the last-applied record")
		r.events.Eventf(node, nil, corev1.EventTypeWarning, ReasonInvalidLastApplied, "Sync", "%v", err)
	}
	plan := desiredNode(node, machine, last)
	if len(plan.Invalid) > 0 {
		logger.Info("skipping machine metadata that cannot be put on a node", "invalid", plan.Invalid)
		r.events.Eventf(machine, node, corev1.EventTypeWarning, ReasonInvalidNodeMetadata, "Sync",
			"not copied to node %s: %s", node.Name, strings.Join(plan.Invalid, ", "))
	}
	key := client.ObjectKeyFromObject(node)
	if !plan.Changed {
		r.nodePatches.sent.Forget(key)
		return nil
	}
	patch := client.MergeFrom(node)
	if needsLock(node, plan.Node) {
		patch = client.MergeFromWithOptions(node, client.MergeFromWithOptimisticLock{})
	}
	data, err := client.MergeFrom(node).Data(plan.Node)
	if err != nil {
		return fmt.Errorf("computing the patch of node %s: %w", node.Name, err)
	}
	return r.nodePatches.send(key, node.ResourceVersion, string(data), func() (string, error) {
		if err := r.opts.Client.Patch(ctx, plan.Node, patch); err != nil {
			return "", fmt.Errorf("updating node %s: %w", node.Name, err)
		}
		logger.Info("synced node metadata from machine")
		return plan.Node.ResourceVersion, nil
	})
}

// nodeRequestsForMachine maps a Machine to the Nodes it matches or references.
func (r *Reconciler) nodeRequestsForMachine(ctx context.Context, obj client.Object) []reconcile.Request {
	m, ok := obj.(*machinev1beta1.Machine)
	if !ok || (r.opts.Namespace != "" && m.Namespace != r.opts.Namespace) {
		return nil
	}
	names := sets.New[string]()
	if ref := m.Status.NodeRef; ref != nil && ref.Name != "" {
		names.Insert(ref.Name)
	}
	lookup := func(index, value string) {
		nodes, err := r.listNodes(ctx, index, value)
		if err != nil {
			log.FromContext(ctx).Error(err, "mapping machine to nodes", "machine", m.Namespace+"/"+m.Name)
		}
		names.Insert(nodes...)
	}
	if id := machineProviderID(m); id != "" {
		lookup(machinenode.IndexNodeProviderID, id)
	}
	for _, ip := range internalIPs(m.Status.Addresses) {
		lookup(IndexNodeInternalIP, ip)
	}
	reqs := make([]reconcile.Request, 0, len(names))
	for _, n := range sets.List(names) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
	}
	return reqs
}

// nodeChanged drops Node updates nodelink ignores (status heartbeats).
func nodeChanged(o, n *corev1.Node) bool {
	return o.UID != n.UID ||
		o.Spec.ProviderID != n.Spec.ProviderID ||
		!slices.Equal(internalIPs(o.Status.Addresses), internalIPs(n.Status.Addresses)) ||
		!maps.Equal(o.Labels, n.Labels) ||
		!maps.Equal(o.Annotations, n.Annotations) ||
		!taintsEqual(o.Spec.Taints, n.Spec.Taints) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

// machineChanged drops Machine updates nodelink ignores (phase, conditions, provider status).
func machineChanged(o, n *machinev1beta1.Machine) bool {
	return machineProviderID(o) != machineProviderID(n) ||
		!slices.Equal(internalIPs(o.Status.Addresses), internalIPs(n.Status.Addresses)) ||
		!maps.Equal(o.Spec.ObjectMeta.Labels, n.Spec.ObjectMeta.Labels) ||
		!maps.Equal(o.Spec.ObjectMeta.Annotations, n.Spec.ObjectMeta.Annotations) ||
		!taintsEqual(o.Spec.Taints, n.Spec.Taints) ||
		!kptr.Equal(o.Status.NodeRef, n.Status.NodeRef) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}
