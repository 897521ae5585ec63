package machinedeployment

import (
	"strconv"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// template returns the template of version v (a Machine label differs).
func template(v string) machinev1beta1.MachineTemplateSpec {
	t := machinev1beta1.MachineTemplateSpec{}
	t.Labels = map[string]string{"app": "w"}
	t.Spec.ObjectMeta.Labels = map[string]string{"version": v}
	return t
}

// newMD is a RollingUpdate MachineDeployment "w" of template v.
func newMD(v string, replicas int32, surge, unavailable intstr.IntOrString) *mdv1beta1.MachineDeployment {
	return &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "md-uid", Generation: 1},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}},
			Template: template(v),
			Strategy: mdv1beta1.MachineDeploymentStrategy{
				Type:          mdv1beta1.RollingUpdateStrategy,
				RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
		},
	}
}

// sst is a set state: MachineSet "w-<v>" of template v, created age
// minutes after t0, with replicas and revision, and its active Machines'
// availability in delete order.
type sst struct {
	v        string
	age      int
	replicas int32
	revision int
	avail    []bool
	deleting int32
	annot    map[string]string
	nodes    []string
}

func (s sst) state(md *mdv1beta1.MachineDeployment) SetState {
	tmpl := template(s.v)
	hash := TemplateHash(&tmpl, nil)
	tmpl.Labels[mdv1beta1.MachineTemplateHashLabel] = hash
	ms := &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "w-" + s.v, Namespace: "ns", UID: types.UID("uid-" + s.v), Generation: 1,
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(s.age) * time.Minute)),
			Annotations: map[string]string{
				mdv1beta1.RevisionAnnotation:        strconv.Itoa(s.revision),
				mdv1beta1.DesiredReplicasAnnotation: strconv.Itoa(int(replicasOf(md))),
			},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(md, machineDeploymentKind)},
		},
		Spec: machinev1beta1.MachineSetSpec{Replicas: ptr.To(s.replicas), Template: tmpl},
	}
	surge, _ := Fenceposts(md)
	ms.Annotations[mdv1beta1.MaxReplicasAnnotation] = strconv.Itoa(int(replicasOf(md) + surge))
	for k, v := range s.annot {
		if v == "" {
			delete(ms.Annotations, k)
		} else {
			ms.Annotations[k] = v
		}
	}
	ms.Status.Replicas = int32(len(s.avail))
	ms.Status.ObservedGeneration = 1
	st := SetState{Set: ms, Available: s.avail, Deleting: s.deleting, Nodes: s.nodes}
	for _, a := range s.avail {
		if a {
			st.Ready++
		}
	}
	return st
}

func states(md *mdv1beta1.MachineDeployment, sets ...sst) []SetState {
	out := make([]SetState, len(sets))
	for i, s := range sets {
		out[i] = s.state(md)
	}
	return out
}

// all returns n availability flags of value a.
func all(n int, a bool) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = a
	}
	return out
}

// sizes returns the planned replicas by set name, the created set included.
func sizes(p Plan) map[string]int32 {
	out := map[string]int32{}
	for _, ms := range p.Sets {
		out[ms.Name] = ptr.Deref(ms.Spec.Replicas, 0)
	}
	if p.Create != nil {
		out["created:"+p.Create.Name] = ptr.Deref(p.Create.Spec.Replicas, 0)
	}
	return out
}

// cond returns the condition of type t of st, or a zero one.
func cond(st mdv1beta1.MachineDeploymentStatus, t machinev1beta1.ConditionType) machinev1beta1.Condition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return machinev1beta1.Condition{}
}

func progressingAt(reason string, status corev1.ConditionStatus, at time.Time) machinev1beta1.Condition {
	return machinev1beta1.Condition{Type: mdv1beta1.ProgressingCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}
