package machinedeployment

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/rollingupdate"
)

// machineDeploymentKind is the kind of the MachineSets' controller reference.
var machineDeploymentKind = mdv1beta1.GroupVersion.WithKind("MachineDeployment")

// SetState is one observed MachineSet; its counts leave out Machines being deleted, but Deleting.
type SetState struct {
	// Set is the MachineSet (never modified).
	Set *machinev1beta1.MachineSet
	// Available says per Machine whether it is available, in the MachineSet
	// controller's delete order (deletepolicy.MachinesToDelete).
	Available []bool
	Ready     int32    // Machines whose Node is Ready
	Deleting  int32    // Machines being deleted (their instances still exist)
	Nodes     []string // the Machines' Nodes
}

func (s SetState) available() int64 { return countTrue(s.Available) }

func countTrue(bs []bool) (n int64) {
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// Plan is what Decide wants done for one MachineDeployment.
type Plan struct {
	// Sets are copies of the input sets, oldest first, as they should be.
	Sets     []*machinev1beta1.MachineSet
	Create   *machinev1beta1.MachineSet   // the new MachineSet to create, or nil
	NewSet   string                       // the new MachineSet's name ("" while none)
	Rollback bool                         // an old MachineSet became the new one again
	Delete   []*machinev1beta1.MachineSet // old MachineSets beyond revisionHistoryLimit
	Revision string                       // the revision annotation ("" leaves it)
	Status   mdv1beta1.MachineDeploymentStatus
	// RequeueAfter is when to look again for the progress deadline (0: no need).
	RequeueAfter time.Duration
	// Taints says per Node whether it carries PreferNoScheduleTaintKey; others are left alone.
	Taints map[string]bool
}

// set is a MachineSet being planned: the observation and the working copy.
type set struct {
	SetState
	ms *machinev1beta1.MachineSet
}

// The rollout's arithmetic is in int64: sums of int32 sizes and replicas+surge never wrap.
func (s *set) replicas() int64 { return max(int64(ptr.Deref(s.ms.Spec.Replicas, 0)), 0) }
func (s *set) active() int64   { return int64(len(s.Available)) }

// footprint is how many Machines the set may have at once: max(replicas, Machines) plus Deleting.
func (s *set) footprint() int64 { return max(s.replicas(), s.active()) + int64(s.Deleting) }

// availableAt is how many available Machines remain once the set is scaled
// to n (the first active−n of Available go).
func (s *set) availableAt(n int64) int64 {
	return countTrue(s.Available[max(s.active()-n, 0):])
}

// rollout is the state of one decision.
type rollout struct {
	md        *mdv1beta1.MachineDeployment
	replicas  int64
	surge     int64
	unavail   int64
	sets      []*set // existing sets, creation order
	newSet    *set   // existing or to be created; nil while none
	create    bool
	rollback  bool
	deletions []*machinev1beta1.MachineSet
	now       time.Time
	conds     []machinev1beta1.Condition
}

// Decide plans one step of md's rollout over the MachineSets it controls; pure: the caller acts.
func Decide(md *mdv1beta1.MachineDeployment, states []SetState, now time.Time) Plan {
	r := &rollout{md: md, replicas: replicasOf(md), now: now, conds: slices.Clone(md.Status.Conditions)}
	r.surge, r.unavail = Fenceposts(md)
	for _, st := range states {
		r.sets = append(r.sets, &set{SetState: st, ms: st.Set.DeepCopy()})
	}
	slices.SortStableFunc(r.sets, func(a, b *set) int { return olderFirst(a.ms, b.ms) })
	r.pausedCondition()

	sync := md.Spec.Paused || r.scalingEvent()
	r.findNewSet(!sync && strategyOf(md) != mdv1beta1.RecreateStrategy)
	switch {
	case sync:
		r.scale()
		if md.Spec.Paused {
			r.cleanupHistory()
		}
	case strategyOf(md) == mdv1beta1.RecreateStrategy:
		r.recreate()
	case strategyOf(md) == mdv1beta1.OnDeleteStrategy:
		r.onDelete()
	default:
		r.rolling()
	}
	r.holdOldSets()
	return r.plan(!sync, states)
}

// holdOldSets marks only the old sets of a running OnDelete rollout with
// DisableMachineCreateAnnotation: else a deleted old Machine comes back from the old template.
func (r *rollout) holdOldSets() {
	hold := strategyOf(r.md) == mdv1beta1.OnDeleteStrategy && !r.md.Spec.Paused && r.newSet != nil
	for _, s := range r.sets {
		_, has := s.ms.Annotations[mdv1beta1.DisableMachineCreateAnnotation]
		if want := hold && s != r.newSet; want && !has {
			s.ms.Annotations = withEntry(s.ms.Annotations, mdv1beta1.DisableMachineCreateAnnotation, "true")
		} else if !want {
			delete(s.ms.Annotations, mdv1beta1.DisableMachineCreateAnnotation)
		}
	}
}

// olderFirst orders MachineSets by creation, then name.
func olderFirst(a, b *machinev1beta1.MachineSet) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
}

func replicasOf(md *mdv1beta1.MachineDeployment) int64 { return rollingupdate.Replicas(md) }

func strategyOf(md *mdv1beta1.MachineDeployment) mdv1beta1.MachineDeploymentStrategyType {
	return cmp.Or(md.Spec.Strategy.Type, mdv1beta1.RollingUpdateStrategy)
}

// Fenceposts resolves maxSurge (rounded up, at most replicas) and maxUnavailable (down, at
// most replicas), bounded (docs/machinedeployment.md); other strategies than RollingUpdate have neither.
func Fenceposts(md *mdv1beta1.MachineDeployment) (surge, unavailable int64) {
	return rollingupdate.Fenceposts(md)
}

// TemplateHash is the machine-template-hash label of a template: FNV-32a of
// its JSON without that label, with collisionCount mixed in, as Deployments.
func TemplateHash(t *machinev1beta1.MachineTemplateSpec, collisionCount *int32) string {
	c := t.DeepCopy()
	delete(c.Labels, mdv1beta1.MachineTemplateHashLabel)
	data, _ := json.Marshal(c) // cannot fail
	h := fnv.New32a()
	_, _ = h.Write(data)
	if collisionCount != nil { // 8 bytes, as Deployments
		_, _ = h.Write(binary.LittleEndian.AppendUint64(nil, uint64(uint32(*collisionCount))))
	}
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// EqualIgnoringHash reports whether two templates are equal but for the hash label; an unset
// spec.authoritativeAPI is MachineAPI (the MachineSet CRD drops it unless MachineAPIMigration is on).
func EqualIgnoringHash(a, b *machinev1beta1.MachineTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, t := range []*machinev1beta1.MachineTemplateSpec{a, b} {
		delete(t.Labels, mdv1beta1.MachineTemplateHashLabel)
		if t.Spec.AuthoritativeAPI == "" {
			t.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityMachineAPI
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// SetName is "<md>-<hash>", the deployment's name cut to a valid length.
func SetName(mdName, hash string) string {
	return mdName[:min(len(mdName), validation.DNS1123SubdomainMaxLength-1-len(hash))] + "-" + hash
}

// findNewSet finds the set of md's template (else the one named after the hash: admission may have
// defaulted its template), gives it the next revision and minReadySeconds; with none and create, plans one.
func (r *rollout) findNewSet(create bool) {
	hash := TemplateHash(&r.md.Spec.Template, r.md.Status.CollisionCount)
	if i := slices.IndexFunc(r.sets, func(s *set) bool {
		return EqualIgnoringHash(&s.ms.Spec.Template, &r.md.Spec.Template)
	}); i >= 0 {
		r.newSet = r.sets[i]
	} else if i := slices.IndexFunc(r.sets, func(s *set) bool {
		return s.ms.Name == SetName(r.md.Name, hash) && s.ms.Spec.Template.Labels[mdv1beta1.MachineTemplateHashLabel] == hash
	}); i >= 0 { // names are unique: at most one
		r.newSet = r.sets[i]
	}
	var maxOld int64
	for _, s := range r.sets {
		if v, ok := revisionOf(s.ms); ok && s != r.newSet {
			maxOld = max(maxOld, v)
		}
	}
	newRevision := strconv.FormatInt(maxOld+1, 10)
	if s := r.newSet; s != nil {
		r.rollback = setRevision(s.ms, newRevision)
		s.ms.Spec.MinReadySeconds = r.md.Spec.MinReadySeconds
		if progressing(r.conds) == nil {
			r.setProgressing(corev1.ConditionTrue, mdv1beta1.ReasonFoundNewMachineSet, "Found new MachineSet %q", s.ms.Name)
		}
		return
	}
	if !create {
		return
	}
	s := &set{ms: r.newMachineSet(hash, newRevision)}
	r.newSet, r.create = s, true
	r.setReplicas(s, r.newSetReplicas(), true)
	r.setProgressing(corev1.ConditionTrue, mdv1beta1.ReasonNewMachineSetCreated, "Created new MachineSet %q", s.ms.Name)
}

// newMachineSet builds md's MachineSet for the template hash (0 replicas).
func (r *rollout) newMachineSet(hash, revision string) *machinev1beta1.MachineSet {
	md := r.md
	tmpl, sel := md.Spec.Template.DeepCopy(), md.Spec.Selector.DeepCopy()
	tmpl.Labels = withEntry(tmpl.Labels, mdv1beta1.MachineTemplateHashLabel, hash)
	sel.MatchLabels = withEntry(sel.MatchLabels, mdv1beta1.MachineTemplateHashLabel, hash)
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            SetName(md.Name, hash),
			Namespace:       md.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			Annotations:     map[string]string{mdv1beta1.RevisionAnnotation: revision},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(md, machineDeploymentKind)},
		},
		Spec: machinev1beta1.MachineSetSpec{
			Replicas:        ptr.To[int32](0),
			MinReadySeconds: md.Spec.MinReadySeconds,
			Selector:        *sel,
			Template:        *tmpl,
		},
	}
}

// withEntry returns a copy of m (labels, annotations) with k=v.
func withEntry(m map[string]string, k, v string) map[string]string {
	return labels.Merge(m, labels.Set{k: v})
}

// old returns the sets other than the new one, oldest first.
func (r *rollout) old() []*set {
	return slices.DeleteFunc(slices.Clone(r.sets), func(s *set) bool { return s == r.newSet })
}

// all returns every set, the new one included (also when to be created).
func (r *rollout) all() []*set {
	if r.create {
		return append(slices.Clone(r.sets), r.newSet)
	}
	return r.sets
}

func revisionOf(ms *machinev1beta1.MachineSet) (int64, bool) {
	v, err := strconv.ParseInt(ms.Annotations[mdv1beta1.RevisionAnnotation], 10, 64)
	return v, err == nil
}

// setRevision raises ms's revision to revision when lower; a set that had one
// keeps it in the revision history and reports a rollback.
func setRevision(ms *machinev1beta1.MachineSet, revision string) (rolledBack bool) {
	want, _ := strconv.ParseInt(revision, 10, 64)
	oldText, had := ms.Annotations[mdv1beta1.RevisionAnnotation]
	old, err := strconv.ParseInt(oldText, 10, 64)
	if had && err != nil {
		return false // not ours to fix
	}
	if old >= want {
		return false
	}
	ms.Annotations = withEntry(ms.Annotations, mdv1beta1.RevisionAnnotation, revision)
	if !had {
		return false
	}
	ms.Annotations[mdv1beta1.RevisionHistoryAnnotation] = appendHistory(ms.Annotations[mdv1beta1.RevisionHistoryAnnotation], oldText)
	return true
}

// appendHistory appends rev to a comma-separated history of at most maxRevisionHistoryChars.
func appendHistory(history, rev string) string {
	var revs []string
	if history != "" {
		revs = strings.Split(history, ",")
	}
	revs = append(revs, rev)
	for len(revs) > 1 && len(strings.Join(revs, ",")) > maxRevisionHistoryChars {
		revs = revs[1:]
	}
	return strings.Join(revs, ",")
}
