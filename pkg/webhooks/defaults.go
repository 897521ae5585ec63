package webhooks

import (
	"maps"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ClusterIDLabel identifies the cluster a Machine belongs to.
const ClusterIDLabel = machinev1beta1.MachineClusterIDLabel

// Defaulted says what defaulting changed.
type Defaulted struct {
	Labels       bool     // the cluster-ID label was added (to the object's or its template's labels)
	Finalizer    bool     // the machine controller's finalizer was added (to a Machine, never to a template)
	ProviderSpec []string // the providerSpec.value keys filled in
	Spec         []string // a MachineDeployment's spec fields filled in
	Warnings     []string // the platform's notes on its defaults (logged only)
	// Refused: why the request is refused instead (ProviderSpecRefusal), as OpenShift's defaulting does.
	Refused field.ErrorList
}

// Changed is true when defaulting changed anything.
func (d Defaulted) Changed() bool {
	return d.Labels || d.Finalizer || len(d.ProviderSpec) > 0 || len(d.Spec) > 0
}

// DefaultMachine fills the cluster-ID label (never overwritten: that orphans), providerSpec
// and, where the machine controller will remove it, its finalizer (saves it a write).
func DefaultMachine(m *machinev1beta1.Machine, cluster ClusterInfo) Defaulted {
	var d Defaulted
	d.Refused = ProviderSpecRefusal(m.Spec.ProviderSpec, cluster)
	m.Labels, d.Labels = defaultClusterLabel(m.Labels, cluster.InfrastructureName)
	d.ProviderSpec, d.Warnings = DefaultProviderSpec(&m.Spec.ProviderSpec, cluster)
	if machineFinalizerDue(m, cluster) {
		m.Finalizers = append(slices.Clone(m.Finalizers), machinev1beta1.MachineFinalizer)
		d.Finalizer = true
	}
	return d
}

// machineFinalizerDue: a Machine lacks the finalizer the cluster's machine controller would add, so will remove;
// elsewhere nothing would remove it (docs/openshift.md, "Machine finalizer").
func machineFinalizerDue(m *machinev1beta1.Machine, cluster ClusterInfo) bool {
	switch {
	case slices.Contains(m.Finalizers, machinev1beta1.MachineFinalizer), m.DeletionTimestamp != nil:
		return false
	case m.Spec.AuthoritativeAPI != "" && m.Spec.AuthoritativeAPI != machinev1beta1.MachineAuthorityMachineAPI:
		return false
	case cluster.MachineNamespace == "" || m.Namespace != cluster.MachineNamespace:
		return false
	}
	// The controller serves the cluster's provider, of a value naming its own type.
	_, fields, ok := valueFields(m.Spec.ProviderSpec)
	p, ownType := providerFor(fields, cluster.Provider)
	return ok && cluster.Provider != ProviderUnknown && p == cluster.Provider && ownType
}

// DefaultMachineSet defaults the template as a Machine, and the cluster-ID label on the
// MachineSet too (never on the immutable selector, whose match it cannot break).
func DefaultMachineSet(ms *machinev1beta1.MachineSet, cluster ClusterInfo) Defaulted {
	return defaultTemplated(&ms.Labels, &ms.Spec.Template, cluster)
}

// defaultTemplated defaults a MachineSet or MachineDeployment as DefaultMachineSet says.
func defaultTemplated(labels *map[string]string, tmpl *machinev1beta1.MachineTemplateSpec, cluster ClusterInfo) Defaulted {
	var own, inTemplate bool
	*labels, own = defaultClusterLabel(*labels, cluster.InfrastructureName)
	tmpl.Labels, inTemplate = defaultClusterLabel(tmpl.Labels, cluster.InfrastructureName)
	d := Defaulted{Labels: own || inTemplate, Refused: ProviderSpecRefusal(tmpl.Spec.ProviderSpec, cluster)}
	d.ProviderSpec, d.Warnings = DefaultProviderSpec(&tmpl.Spec.ProviderSpec, cluster)
	return d
}

// defaultClusterLabel returns a copy of labels with the cluster-ID label added, if it was.
func defaultClusterLabel(labels map[string]string, infraName string) (map[string]string, bool) {
	if _, ok := labels[ClusterIDLabel]; ok || infraName == "" {
		return labels, false
	}
	out := map[string]string{ClusterIDLabel: infraName}
	maps.Copy(out, labels)
	return out, true
}

// defaultPtr points a nil *p at v and says whether it did.
func defaultPtr[T any](p **T, v T) bool {
	if *p != nil {
		return false
	}
	*p = &v
	return true
}
