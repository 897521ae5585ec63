package kubemark

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubemarkv1alpha1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/kubemark/v1alpha1"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// DefaultReassertInterval is how often Update is asked back while a node is
// unhealthy, to undo a heartbeat kwok had scheduled before the failure.
const DefaultReassertInterval = time.Minute

// Options configure an Actuator.
type Options struct {
	// Client reads and writes Nodes and Leases; a cached client works (a lag only causes a retry).
	Client client.Client
	// NodeReader (optional, normally the manager's cache carrying IndexNodeInternalIP) reads Nodes
	// without API requests; nil reads them through Client and lists every Node to pick an IP.
	NodeReader client.Reader
	// Clock (optional) tells the time; nil is the real clock.
	Clock clock.PassiveClock
	// ReassertInterval is the longest Update waits while a node is unhealthy; 0 means DefaultReassertInterval.
	ReassertInterval time.Duration
}

// Actuator is the kubemark provider: one Node per Machine. See docs/kubemark.md.
type Actuator struct {
	client   client.Client
	nodes    client.Reader
	indexed  bool // nodes has IndexNodeInternalIP
	clock    clock.PassiveClock
	reassert time.Duration
	recent   *recentNodes
}

var (
	_ provider.Actuator   = &Actuator{}
	_ provider.SpecServer = &Actuator{}
)

// NewActuator returns a kubemark Actuator.
func NewActuator(opts Options) *Actuator {
	a := &Actuator{client: opts.Client, nodes: cmp.Or[client.Reader](opts.NodeReader, opts.Client), indexed: opts.NodeReader != nil,
		clock: cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}), reassert: cmp.Or(max(opts.ReassertInterval, 0), DefaultReassertInterval),
		recent: newRecentNodes()}
	return a
}

func (a *Actuator) now() time.Time { return a.clock.Now() }

// ProviderSpecKinds implements provider.SpecServer: kubemark.machine-api-operator.io
// providerSpecs of any kind.
func (a *Actuator) ProviderSpecKinds() []schema.GroupKind {
	return []schema.GroupKind{{Group: kubemarkv1alpha1.GroupName}}
}

// errForeignNode is wrapped by the error for a Node that has the Machine's
// name but another providerID.
var errForeignNode = errors.New("a node of the machine's name belongs to something else")

// IsForeignNode reports whether err says that a Node of the Machine's name
// exists with another providerID (so it is not this Machine's).
func IsForeignNode(err error) bool { return errors.Is(err, errForeignNode) }

// Create registers the Machine's Node once bootDelay has passed since the Machine was created (until then it
// writes only state Booting and returns a RequeueAfterError), or adopts the Node that has its providerID.
func (a *Actuator) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	spec, err := ProviderSpecFromMachine(m)
	if err != nil {
		return err
	}
	if msgs := validation.IsValidLabelValue(m.Name); len(msgs) > 0 {
		return provider.InvalidConfiguration("metadata.name: %q cannot name a kubemark node, it must be a valid %s label value: %s",
			m.Name, corev1.LabelHostname, msgs[0])
	}
	node, err := a.ownNode(ctx, a.nodes, m)
	switch {
	case err == nil:
		log.FromContext(ctx).V(1).Info("adopting the existing node", "node", node.Name)
		syncMachine(m, node, spec, a.now())
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}

	now := a.now()
	if d := spec.BootDelay.Duration; d > 0 && !m.CreationTimestamp.IsZero() {
		if wait := m.CreationTimestamp.Add(d).Sub(now); wait > 0 {
			setProviderStatus(m, &kubemarkv1alpha1.KubemarkMachineProviderStatus{State: kubemarkv1alpha1.InstanceBooting})
			return provider.RequeueAfter(wait, fmt.Sprintf("instance is booting: its node registers %s after the machine was created (bootDelay)", d))
		}
	}

	// A Lease taken over from an earlier Node of this Machine would keep kwok away from the new one.
	if st := providerStatusOf(m); st.NodeName != "" {
		if err := a.releaseLease(ctx, m.Name, ""); err != nil {
			return err
		}
	}
	ip, err := a.pickNodeIP(ctx, m)
	if err != nil {
		return err
	}
	desired := newNode(m, spec, ip, HealthAt(*spec.Health, now, now).Healthy, now)
	created := desired.DeepCopy()
	switch err := a.client.Create(ctx, created); {
	case apierrors.IsAlreadyExists(err): // registered concurrently, or the cache lagged: check whose, uncached
		if created, err = a.ownNode(ctx, a.client, m); err != nil {
			return fmt.Errorf("registering node %q: it already exists: %w", m.Name, err)
		}
	case apierrors.IsInvalid(err):
		return provider.InvalidConfiguration("registering node %q: %v", m.Name, err)
	case err != nil:
		return fmt.Errorf("registering node %q: %w", m.Name, err)
	default:
		// The API server keeps a Node's status on create; set it again should it not (an admission plugin).
		if len(created.Status.Capacity) == 0 || len(created.Status.Addresses) == 0 {
			created.Status = desired.Status
			if err := a.client.Status().Update(ctx, created); err != nil {
				return fmt.Errorf("setting the status of node %q: %w", m.Name, err)
			}
		}
		log.FromContext(ctx).Info("registered node", "node", created.Name, "providerID", created.Spec.ProviderID, "internalIP", ip.String())
	}
	a.recent.noteRegistered(created.Name, a.now())
	syncMachine(m, created, spec, a.now())
	return nil
}

// Exists reports whether the Node named after the Machine with its providerID exists. For a provisioned
// Machine, false is final, so a Node missing from the cache is looked up uncached first (docs/kubemark.md).
func (a *Actuator) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	_, err := a.ownNode(ctx, a.nodes, m)
	if a.indexed && (apierrors.IsNotFound(err) || IsForeignNode(err)) {
		switch now := a.now(); {
		case apierrors.IsNotFound(err) && a.recent.wasRegistered(m.Name, now):
			return true, nil
		case a.recent.wasDeleted(m.Name, "", now), !provider.IsProvisioned(m):
		default:
			_, err = a.ownNode(ctx, a.client, m)
		}
	}
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case IsForeignNode(err):
		log.FromContext(ctx).V(1).Info("a node of the machine's name exists but is not the machine's", "err", err)
		return false, nil
	default:
		return false, err
	}
}

// Update refreshes providerID, addresses and providerStatus from the Node and applies the health simulation.
// It returns a RequeueAfterError for the next health change or, while unhealthy, after at most ReassertInterval.
func (a *Actuator) Update(ctx context.Context, m *machinev1beta1.Machine) error {
	spec, err := ProviderSpecFromMachine(m)
	if err != nil {
		return err
	}
	node, err := a.ownNode(ctx, a.nodes, m)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %q of the machine is gone: %w", m.Name, err)
		}
		return err
	}
	now := a.now()
	w := HealthAt(*spec.Health, node.CreationTimestamp.Time, now)
	syncMachine(m, node, spec, now)
	if w.Healthy {
		if err := a.ensureHealthy(ctx, node); err != nil {
			return err
		}
		if w.Until.IsZero() {
			return nil
		}
		return provider.RequeueAfter(w.Until.Sub(now), "health simulation: the node turns unhealthy then")
	}
	if err := a.ensureUnhealthy(ctx, node, w); err != nil {
		return err
	}
	if !w.Until.IsZero() && w.Until.Sub(now) <= a.reassert {
		return provider.RequeueAfter(w.Until.Sub(now), "health simulation: the node recovers then")
	}
	return provider.RequeueAfter(a.reassert, "health simulation: checking that the node stays unhealthy")
}

// Delete deletes the Machine's Node and the Lease the health simulation may hold for it. A missing Node, or
// one that is not the Machine's (left alone), is not an error.
func (a *Actuator) Delete(ctx context.Context, m *machinev1beta1.Machine) error {
	heldLease := providerStatusOf(m).State == kubemarkv1alpha1.InstanceUnhealthy
	node, err := a.ownNode(ctx, a.nodes, m)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		if !heldLease {
			return nil
		}
		return a.releaseLease(ctx, m.Name, "")
	case IsForeignNode(err):
		log.FromContext(ctx).Info("not deleting a node that is not the machine's", "err", err)
		return nil
	default:
		return err
	}
	// The cache may still show a Node this process has just deleted: once is enough.
	if node.DeletionTimestamp == nil && !a.recent.wasDeleted(node.Name, node.UID, a.now()) {
		if err := a.deleteNode(ctx, node); err != nil {
			return err
		}
		a.recent.noteDeleted(node.Name, node.UID, a.now())
		log.FromContext(ctx).Info("deleted node", "node", node.Name)
	}
	// The provider holds a node's Lease only while it keeps the node unhealthy; kwok's goes with the Node.
	if _, marked := node.Annotations[SimulatedUnhealthyAnnotation]; !marked && !heldLease {
		return nil
	}
	return a.releaseLease(ctx, node.Name, node.UID)
}

// deleteNode deletes the Node if its UID is still node's; a Node already gone is no error.
func (a *Actuator) deleteNode(ctx context.Context, node *corev1.Node) error {
	if err := a.client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %q: %w", node.Name, err)
	}
	return nil
}

// providerStatusOf decodes the Machine's providerStatus; empty when it has none or it does not decode.
func providerStatusOf(m *machinev1beta1.Machine) kubemarkv1alpha1.KubemarkMachineProviderStatus {
	var st kubemarkv1alpha1.KubemarkMachineProviderStatus
	if m.Status.ProviderStatus != nil && len(m.Status.ProviderStatus.Raw) > 0 {
		if err := json.Unmarshal(m.Status.ProviderStatus.Raw, &st); err != nil {
			return kubemarkv1alpha1.KubemarkMachineProviderStatus{}
		}
	}
	return st
}

// ownNode gets the Machine's Node from r: NotFound when there is none, an errForeignNode when the Node of
// that name has another providerID.
func (a *Actuator) ownNode(ctx context.Context, r client.Reader, m *machinev1beta1.Machine) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := r.Get(ctx, client.ObjectKey{Name: m.Name}, node); err != nil {
		return nil, err
	}
	if want := ProviderID(m.Namespace, m.Name); node.Spec.ProviderID != want {
		return nil, fmt.Errorf("%w: node %q has providerID %q, not %q; it is not this machine's node and is left alone: delete it or give the machine another name",
			errForeignNode, node.Name, node.Spec.ProviderID, want)
	}
	return node, nil
}

// pickNodeIP returns the first candidate InternalIP for the Machine that no Node uses (docs/kubemark.md).
func (a *Actuator) pickNodeIP(ctx context.Context, m *machinev1beta1.Machine) (netip.Addr, error) {
	if a.indexed {
		return pickNodeIP(m.Namespace, m.Name, func(ip string) (bool, error) {
			nodes := &corev1.NodeList{}
			if err := a.nodes.List(ctx, nodes, client.MatchingFields{IndexNodeInternalIP: ip}, client.UnsafeDisableDeepCopy); err != nil {
				return false, fmt.Errorf("looking up nodes with InternalIP %s: %w", ip, err)
			}
			return len(nodes.Items) > 0, nil
		})
	}
	nodes := &corev1.NodeList{}
	if err := a.client.List(ctx, nodes); err != nil {
		return netip.Addr{}, fmt.Errorf("listing nodes to pick a free InternalIP: %w", err)
	}
	used := map[string]bool{}
	for i := range nodes.Items {
		for _, ip := range internalIPs(&nodes.Items[i]) {
			used[ip] = true
		}
	}
	return pickNodeIP(m.Namespace, m.Name, func(ip string) (bool, error) { return used[ip], nil })
}

// syncMachine sets the three fields the provider owns on the Machine from the Node: spec.providerID,
// status.addresses and status.providerStatus.
func syncMachine(m *machinev1beta1.Machine, node *corev1.Node, spec *kubemarkv1alpha1.KubemarkMachineProviderSpec, now time.Time) {
	m.Spec.ProviderID = new(node.Spec.ProviderID)
	m.Status.Addresses = machineAddresses(node)
	w := HealthAt(*spec.Health, node.CreationTimestamp.Time, now)
	st := &kubemarkv1alpha1.KubemarkMachineProviderStatus{
		NodeName:     node.Name,
		RegisteredAt: new(node.CreationTimestamp),
		State:        kubemarkv1alpha1.InstanceRunning,
	}
	if !w.Healthy {
		st.State = kubemarkv1alpha1.InstanceUnhealthy
	}
	if !w.Until.IsZero() {
		st.NextHealthTransition = new(metav1.NewTime(w.Until))
	}
	setProviderStatus(m, st)
}

// setProviderStatus writes st, with its apiVersion and kind, into the Machine's status.providerStatus.
func setProviderStatus(m *machinev1beta1.Machine, st *kubemarkv1alpha1.KubemarkMachineProviderStatus) {
	st.APIVersion = kubemarkv1alpha1.GroupVersion.String()
	st.Kind = kubemarkv1alpha1.ProviderStatusKind
	raw, err := json.Marshal(st)
	if err != nil { // cannot happen: plain fields only
		panic(fmt.Sprintf("encoding KubemarkMachineProviderStatus: %v", err))
	}
	m.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
}

// ProviderSpecFromMachine decodes, defaults and validates the Machine's
// providerSpec.value. Any problem is a provider.InvalidConfiguration error
// whose message names the field, e.g.
//
//	providerSpec.value.cpu: Invalid value: "-1": must be positive
func ProviderSpecFromMachine(m *machinev1beta1.Machine) (*kubemarkv1alpha1.KubemarkMachineProviderSpec, error) {
	path := field.NewPath("providerSpec", "value")
	var raw []byte
	if v := m.Spec.ProviderSpec.Value; v != nil {
		var err error
		if raw, err = v.MarshalJSON(); err != nil { // Raw, else Object encoded
			return nil, provider.InvalidConfiguration("%s: cannot be encoded: %v", path, err)
		}
	}
	spec, errs := kubemarkv1alpha1.DecodeProviderSpec(raw, path)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return nil, provider.InvalidConfiguration("%s", strings.Join(msgs, "; "))
	}
	return spec, nil
}

// recentTTL is how long the provider trusts what it did itself over a cache that does not show it yet
// (the informer catches up in well under a second normally, within this bound after an API-server outage).
const recentTTL = time.Minute

// recentNodes remembers the Nodes this process registered and deleted in the last recentTTL, so a lagging
// cache costs no uncached read (Exists) and no repeated DELETE (Delete). Lost on restart.
type recentNodes struct {
	mu    sync.Mutex
	nodes map[string]recentNode // by node name
}

// recentNode is the last thing this process did to a Node: registered it, or deleted it (with its UID).
type recentNode struct {
	deleted bool
	uid     types.UID
	at      time.Time
}

func newRecentNodes() *recentNodes { return &recentNodes{nodes: map[string]recentNode{}} }

// noteRegistered records that the Node name was just created.
func (r *recentNodes) noteRegistered(name string, now time.Time) { r.note(name, recentNode{at: now}) }

// noteDeleted records that the Node name with uid was just deleted.
func (r *recentNodes) noteDeleted(name string, uid types.UID, now time.Time) {
	r.note(name, recentNode{deleted: true, uid: uid, at: now})
}

func (r *recentNodes) note(name string, n recentNode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, old := range r.nodes {
		if n.at.Sub(old.at) >= recentTTL {
			delete(r.nodes, k)
		}
	}
	r.nodes[name] = n
}

// last returns what this process did to the Node name within recentTTL.
func (r *recentNodes) last(name string, now time.Time) (recentNode, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[name]
	return n, ok && now.Sub(n.at) < recentTTL
}

// wasRegistered reports whether this process created the Node name within recentTTL (and has not deleted it).
func (r *recentNodes) wasRegistered(name string, now time.Time) bool {
	n, ok := r.last(name, now)
	return ok && !n.deleted
}

// wasDeleted reports whether this process deleted the Node name within recentTTL; uid, when set, must be
// the deleted Node's.
func (r *recentNodes) wasDeleted(name string, uid types.UID, now time.Time) bool {
	n, ok := r.last(name, now)
	return ok && n.deleted && (uid == "" || n.uid == uid)
}
