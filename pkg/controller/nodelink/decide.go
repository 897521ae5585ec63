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
	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotations nodelink writes on Nodes.
const (
	// MachineAnnotation on a Node names its Machine as "<namespace>/<name>".
	MachineAnnotation = "machine.openshift.io/machine"
	// LastAppliedAnnotation on a Node records, as JSON
	// {"labels":{..},"annotations":{..},"taints":[..]}, the labels,
	// annotations and taints nodelink copied from the Machine the last time.
	// Only what is recorded here is ever removed from the Node, and only
	// while its value is still the recorded one.
	LastAppliedAnnotation = "machine.openshift.io/nodelink-last-applied"
)

// lastApplied is what nodelink copied from the Machine onto the Node.
type lastApplied struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
}

func (l lastApplied) empty() bool {
	return len(l.Labels) == 0 && len(l.Annotations) == 0 && len(l.Taints) == 0
}

// encode returns the canonical JSON of l (map keys sorted by encoding/json,
// taints in the Machine's order, without timeAdded).
func (l lastApplied) encode() string {
	b, err := json.Marshal(l)
	if err != nil {
		// Maps of strings and taints without times always marshal.
		panic(fmt.Sprintf("encoding last-applied: %v", err))
	}
	return string(b)
}

// parseLastApplied reads the LastAppliedAnnotation of node. A missing
// annotation is an empty record. A malformed one is reported as an error
// together with an empty record: nodelink then removes nothing (it cannot
// prove it applied anything) and rewrites the annotation.
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

// nodePlan is what nodelink must write to a Node.
type nodePlan struct {
	// Node is a copy of the input Node with the desired metadata and taints.
	Node *corev1.Node
	// Changed reports whether Node differs from the input (a patch is due).
	Changed bool
	// Invalid lists the Machine's labels, annotations and taints that cannot
	// be put on a Node (the API server would reject them); they are skipped.
	Invalid []string
}

// reservedAnnotations are managed by nodelink itself and are never copied
// from a Machine.
var reservedAnnotations = map[string]bool{MachineAnnotation: true, LastAppliedAnnotation: true}

// desiredNode decides the Node's metadata and taints for machine, given what
// nodelink applied before (last):
//   - the Node is annotated MachineAnnotation=<ns>/<name>;
//   - every label, annotation and taint of the Machine's spec.metadata and
//     spec.taints is set; a taint is identified by key and effect, and a Node
//     taint with the same key and effect but another value gets the Machine's
//     value;
//   - what last recorded but the Machine no longer has is removed, only if the
//     Node still carries exactly the recorded value (a value someone else
//     changed since, or a label nobody applied through nodelink, is kept);
//   - the record becomes what the Machine asks for now.
//
// It does not modify node or machine.
func desiredNode(node *corev1.Node, machine *machinev1beta1.Machine, last lastApplied) nodePlan {
	out := node.DeepCopy()
	var invalid []string

	wantLabels := map[string]string{}
	for k, v := range machine.Spec.ObjectMeta.Labels {
		if errs := labelErrors(k, v); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("label %q: %s", k, strings.Join(errs, "; ")))
			continue
		}
		wantLabels[k] = v
	}
	wantAnnotations := map[string]string{}
	for k, v := range machine.Spec.ObjectMeta.Annotations {
		if reservedAnnotations[k] {
			invalid = append(invalid, fmt.Sprintf("annotation %q: reserved for nodelink", k))
			continue
		}
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("annotation %q: %s", k, strings.Join(errs, "; ")))
			continue
		}
		wantAnnotations[k] = v
	}
	var wantTaints []corev1.Taint
	for _, t := range machine.Spec.Taints {
		if errs := taintErrors(t); len(errs) > 0 {
			invalid = append(invalid, fmt.Sprintf("taint %q (%s): %s", t.Key, t.Effect, strings.Join(errs, "; ")))
			continue
		}
		if slices.ContainsFunc(wantTaints, sameTaintID(t)) {
			continue // the first of duplicate key+effect pairs wins
		}
		wantTaints = append(wantTaints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	sort.Strings(invalid)

	out.Labels = syncMap(out.Labels, wantLabels, last.Labels)

	lastAnnotations := maps.Clone(last.Annotations)
	for k := range reservedAnnotations {
		delete(lastAnnotations, k) // never remove our own annotations through the record
	}
	out.Annotations = syncMap(out.Annotations, wantAnnotations, lastAnnotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[MachineAnnotation] = machine.Namespace + "/" + machine.Name

	out.Spec.Taints = syncTaints(out.Spec.Taints, wantTaints, last.Taints)

	record := lastApplied{Labels: wantLabels, Annotations: wantAnnotations, Taints: wantTaints}
	if record.empty() {
		delete(out.Annotations, LastAppliedAnnotation)
	} else {
		out.Annotations[LastAppliedAnnotation] = record.encode()
	}

	changed := !maps.Equal(node.Labels, out.Labels) ||
		!maps.Equal(node.Annotations, out.Annotations) ||
		!taintsEqual(node.Spec.Taints, out.Spec.Taints)
	if !changed {
		out = node.DeepCopy()
	}
	return nodePlan{Node: out, Changed: changed, Invalid: invalid}
}

// needsLock reports whether the Node patch from node to out must carry an
// optimistic lock: it removes a label or annotation (only right while the
// value is still the one nodelink recorded) or changes the taints (a merge
// patch replaces the whole list). A patch that only adds or sets keys is
// right whatever else changed meanwhile, so it goes without one and does not
// fail on an unrelated concurrent write (the node controllers' TTL
// annotation and not-ready taint land on a new Node at the same moment).
func needsLock(node, out *corev1.Node) bool {
	removes := func(from, to map[string]string) bool {
		for k := range from {
			if _, ok := to[k]; !ok {
				return true
			}
		}
		return false
	}
	return removes(node.Labels, out.Labels) || removes(node.Annotations, out.Annotations) ||
		!taintsEqual(node.Spec.Taints, out.Spec.Taints)
}

// syncMap returns current with want set and with the keys of last that want
// lacks removed while their value is still the recorded one. It returns a new
// map (nil when empty and current was nil).
func syncMap(current, want, last map[string]string) map[string]string {
	out := maps.Clone(current)
	if out == nil && len(want) > 0 {
		out = map[string]string{}
	}
	for k, v := range want {
		out[k] = v
	}
	for k, v := range last {
		if _, keep := want[k]; keep {
			continue
		}
		if cur, ok := out[k]; ok && cur == v {
			delete(out, k)
		}
	}
	return out
}

// syncTaints returns current with each wanted taint present (added at the end,
// or its value corrected in place) and with the taints of last that want
// lacks removed while the Node's taint still has the recorded value.
func syncTaints(current, want, last []corev1.Taint) []corev1.Taint {
	out := slices.Clone(current)
	for _, w := range want {
		i := slices.IndexFunc(out, sameTaintID(w))
		if i < 0 {
			out = append(out, w)
			continue
		}
		if out[i].Value != w.Value {
			out[i].Value = w.Value
		}
	}
	for _, l := range last {
		if slices.ContainsFunc(want, sameTaintID(l)) {
			continue
		}
		out = slices.DeleteFunc(out, func(t corev1.Taint) bool {
			return t.Key == l.Key && t.Effect == l.Effect && t.Value == l.Value
		})
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

func labelErrors(k, v string) []string {
	errs := validation.IsQualifiedName(k)
	return append(errs, validation.IsValidLabelValue(v)...)
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

// nodeRefFor is the reference nodelink puts in a Machine's status.nodeRef.
func nodeRefFor(node *corev1.Node) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Node", Name: node.Name, UID: node.UID}
}

// nodeRefUpToDate reports whether the Machine's nodeRef already points at
// node (kind, name and UID; other fields are left as they are).
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
	// matchDeleting: the only matches are Machines being deleted that were
	// not linked to this Node (see mayLink).
	matchDeleting matchKind = "deleting"
)

// mayLink reports whether machine may be linked to node. A Machine that is
// being deleted keeps the Node it has and is never linked to another: only a
// Node its status.nodeRef already names (same name, and same UID when the
// reference has one) qualifies. The machine controller drains and deletes the
// Node in status.nodeRef, so a new Node that reused the Machine's InternalIP,
// or a Node recreated under its old name, must never take the old one's place.
func mayLink(machine *machinev1beta1.Machine, node *corev1.Node) bool {
	if machine.DeletionTimestamp == nil {
		return true
	}
	ref := machine.Status.NodeRef
	return ref != nil && ref.Name == node.Name && (ref.UID == "" || ref.UID == node.UID)
}

// pickMachine chooses node's Machine from the Machines with its providerID
// and those with one of its InternalIPs. The providerID matches decide when
// there are any; only without one are the InternalIP matches used. Of the
// deciding matches, those that may not be linked to node (see mayLink) are
// dropped: when that leaves none, the result is matchDeleting with the
// dropped Machines. More than one Machine left is ambiguous and nothing is
// linked.
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
