package nodelink

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/machinenode"
)

// Annotations nodelink writes on Nodes, with machinenode.MachineAnnotation.
const (
	// LastAppliedAnnotation on a Node records, as JSON {"labels","annotations","taints"},
	// what nodelink copied from the Machine: only that is ever removed.
	LastAppliedAnnotation = "machine.openshift.io/nodelink-last-applied"
)

type lastApplied struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
}

// encode returns the canonical JSON of l (sorted keys, the Machine's taint order).
func (l lastApplied) encode() string {
	b, err := json.Marshal(l)
	if err != nil { // maps of strings and taints without times always marshal
		panic(fmt.Sprintf("encoding last-applied: %v", err))
	}
	return string(b)
}

// parseLastApplied reads node's record; a malformed one is an error and an
// empty record (nodelink then removes nothing).
func parseLastApplied(node *corev1.Node) (lastApplied, error) {
	raw, ok := node.Annotations[LastAppliedAnnotation]
	if !ok || raw == "" {
		return lastApplied{}, nil
	}
	var l lastApplied
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return lastApplied{}, fmt.Errorf("annotation %s on node %s is not valid JSON, ignoring it: %w", LastAppliedAnnotation, node.Name, err)
	}
	return l, nil
}

// nodePlan is the desired Node, whether it differs, and what a Node cannot carry.
type nodePlan struct {
	Node    *corev1.Node
	Changed bool
	Invalid []string
}

// reservedAnnotations are nodelink's own, never copied from a Machine.
var reservedAnnotations = map[string]bool{machinenode.MachineAnnotation: true, LastAppliedAnnotation: true}

// desiredNode sets the Machine's entries on a copy of node (a taint is keyed by key and effect) and removes
// those last recorded that the Machine dropped, while unchanged; the record becomes what the Machine asks now.
func desiredNode(node *corev1.Node, machine *machinev1beta1.Machine, last lastApplied) nodePlan {
	out := node.DeepCopy()
	var invalid []string
	ok := func(errs []string, what string, args ...any) bool {
		if len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf(what, args...)+": "+strings.Join(errs, "; "))
		}
		return len(errs) == 0
	}
	wantLabels := map[string]string{}
	for k, v := range machine.Spec.ObjectMeta.Labels {
		if ok(append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...), "label %q", k) {
			wantLabels[k] = v
		}
	}
	wantAnnotations := map[string]string{}
	for k, v := range machine.Spec.ObjectMeta.Annotations {
		errs := validation.IsQualifiedName(strings.ToLower(k))
		if reservedAnnotations[k] {
			errs = []string{"reserved for nodelink"}
		}
		if ok(errs, "annotation %q", k) {
			wantAnnotations[k] = v
		}
	}
	var wantTaints []corev1.Taint
	for _, t := range machine.Spec.Taints { // of duplicate key+effect pairs, the first wins
		if ok(taintErrors(t), "taint %q (%s)", t.Key, t.Effect) && !slices.ContainsFunc(wantTaints, sameTaintID(t)) {
			wantTaints = append(wantTaints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	sort.Strings(invalid)

	out.Labels = syncMap(out.Labels, wantLabels, last.Labels)

	lastAnnotations := maps.Clone(last.Annotations)
	maps.DeleteFunc(lastAnnotations, func(k, _ string) bool { return reservedAnnotations[k] })
	out.Annotations = syncMap(out.Annotations, wantAnnotations, lastAnnotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[machinenode.MachineAnnotation] = machine.Namespace + "/" + machine.Name

	out.Spec.Taints = syncTaints(out.Spec.Taints, wantTaints, last.Taints)

	if len(wantLabels) == 0 && len(wantAnnotations) == 0 && len(wantTaints) == 0 {
		delete(out.Annotations, LastAppliedAnnotation)
	} else {
		out.Annotations[LastAppliedAnnotation] = lastApplied{Labels: wantLabels, Annotations: wantAnnotations, Taints: wantTaints}.encode()
	}

	changed := !maps.Equal(node.Labels, out.Labels) ||
		!maps.Equal(node.Annotations, out.Annotations) ||
		!taintsEqual(node.Spec.Taints, out.Spec.Taints)
	if !changed {
		out = node.DeepCopy()
	}
	return nodePlan{Node: out, Changed: changed, Invalid: invalid}
}

// needsLock reports whether the patch removes a key (right only while it has the recorded value) or replaces
// the taints; a patch that only sets keys must not fail on the node controllers' writes to a new Node.
func needsLock(node, out *corev1.Node) bool {
	return !sets.KeySet(out.Labels).IsSuperset(sets.KeySet(node.Labels)) ||
		!sets.KeySet(out.Annotations).IsSuperset(sets.KeySet(node.Annotations)) ||
		!taintsEqual(node.Spec.Taints, out.Spec.Taints)
}

// syncMap returns current with want set and last's other keys removed while
// they have the recorded value (a new map).
func syncMap(current, want, last map[string]string) map[string]string {
	out := maps.Clone(current)
	if out == nil && len(want) > 0 {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	for k, v := range last {
		if _, keep := want[k]; !keep && out[k] == v {
			delete(out, k)
		}
	}
	return out
}

// syncTaints is syncMap for taints (added at the end, values corrected in place).
func syncTaints(current, want, last []corev1.Taint) []corev1.Taint {
	out := slices.Clone(current)
	for _, w := range want {
		if i := slices.IndexFunc(out, sameTaintID(w)); i >= 0 {
			out[i].Value = w.Value
		} else {
			out = append(out, w)
		}
	}
	for _, l := range last {
		if !slices.ContainsFunc(want, sameTaintID(l)) {
			out = slices.DeleteFunc(out, func(t corev1.Taint) bool { return sameTaintID(l)(t) && t.Value == l.Value })
		}
	}
	if len(out) == 0 && current == nil {
		return nil
	}
	return out
}

func sameTaintID(a corev1.Taint) func(corev1.Taint) bool {
	return func(b corev1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect }
}

// taintsEqual compares taints by key, value, effect and time, in order.
func taintsEqual(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool {
		return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect && x.TimeAdded.Equal(y.TimeAdded)
	})
}

func taintErrors(t corev1.Taint) []string {
	errs := validation.IsQualifiedName(t.Key)
	if t.Value != "" {
		errs = append(errs, validation.IsValidLabelValue(t.Value)...)
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, fmt.Sprintf("effect must be one of %s, %s, %s", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute))
	}
	return errs
}

// nodeRefUpToDate reports whether the Machine's nodeRef has node's kind, name and UID.
func nodeRefUpToDate(machine *machinev1beta1.Machine, node *corev1.Node) bool {
	ref := machine.Status.NodeRef
	return ref != nil && ref.Kind == "Node" && ref.Name == node.Name && ref.UID == node.UID
}

// matchKind says how a Node's Machine was found.
type matchKind string

const (
	matchNone       matchKind = "none"
	matchProviderID matchKind = "providerID"
	matchIP         matchKind = "internalIP"
	matchAmbiguous  matchKind = "ambiguous"
	matchDeleting   matchKind = "deleting" // only Machines mayLink refuses
)

// mayLink reports whether machine may be linked to node: a deleting Machine only to the Node its nodeRef
// names (same UID when known), since its drain and Node deletion act on that reference.
func mayLink(machine *machinev1beta1.Machine, node *corev1.Node) bool {
	if machine.DeletionTimestamp == nil {
		return true
	}
	ref := machine.Status.NodeRef
	return ref != nil && ref.Name == node.Name && (ref.UID == "" || ref.UID == node.UID)
}

// pickMachine chooses node's Machine among the providerID matches, else the
// InternalIP ones, dropping those mayLink refuses.
func pickMachine(node *corev1.Node, byProviderID, byIP []*machinev1beta1.Machine) (*machinev1beta1.Machine, matchKind, []*machinev1beta1.Machine) {
	found, kind := byProviderID, matchProviderID
	if len(found) == 0 {
		found, kind = byIP, matchIP
	}
	linkable := slices.DeleteFunc(slices.Clone(found), func(m *machinev1beta1.Machine) bool { return !mayLink(m, node) })
	switch {
	case len(linkable) == 1:
		return linkable[0], kind, nil
	case len(linkable) > 1:
		return nil, matchAmbiguous, linkable
	case len(found) > 0:
		return nil, matchDeleting, found
	}
	return nil, matchNone, nil
}

func machineKeys(ms []*machinev1beta1.Machine) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Namespace+"/"+m.Name)
	}
	sort.Strings(out)
	return out
}
