package webhooks

import (
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// ClusterIDLabel identifies the cluster a Machine belongs to
// (machine.openshift.io/cluster-api-cluster).
const ClusterIDLabel = machinev1beta1.MachineClusterIDLabel

// Defaulted says what defaulting changed.
type Defaulted struct {
	// Labels is true when the cluster-ID label was added to metadata.labels
	// (for a MachineSet: to metadata.labels or spec.template.metadata.labels).
	Labels bool
	// ProviderSpec lists the providerSpec.value keys that were filled in.
	ProviderSpec []string
	// Spec lists the spec fields that were filled in (a MachineDeployment's
	// replicas, strategy, revisionHistoryLimit, progressDeadlineSeconds).
	Spec []string
	// Warnings are the platform's notes on its defaults (logged only).
	Warnings []string
}

// Changed is true when defaulting changed anything.
func (d Defaulted) Changed() bool { return d.Labels || len(d.ProviderSpec) > 0 || len(d.Spec) > 0 }

// DefaultMachine fills what m leaves out: the cluster-ID label (only when
// cluster.InfrastructureName is known; an existing label is never
// overwritten, since a different value would orphan the Machine) and the
// provider's providerSpec defaults (see DefaultProviderSpec).
func DefaultMachine(m *machinev1beta1.Machine, cluster ClusterInfo) Defaulted {
	var d Defaulted
	m.Labels, d.Labels = defaultClusterLabel(m.Labels, cluster.InfrastructureName)
	d.ProviderSpec, d.Warnings = DefaultProviderSpec(&m.Spec.ProviderSpec, cluster)
	return d
}

// DefaultMachineSet defaults spec.template.spec as DefaultMachine defaults a
// Machine, and adds the cluster-ID label to the MachineSet's and its
// template's labels when missing (never to the selector, which is the
// user's choice and immutable). Adding a template label never breaks the
// selector match.
func DefaultMachineSet(ms *machinev1beta1.MachineSet, cluster ClusterInfo) Defaulted {
	return defaultTemplated(&ms.Labels, &ms.Spec.Template, cluster)
}

// defaultTemplated defaults an object that creates Machines from tmpl (a
// MachineSet, a MachineDeployment): the cluster-ID label on its labels and
// the template's, and the template's providerSpec.
func defaultTemplated(labels *map[string]string, tmpl *machinev1beta1.MachineTemplateSpec, cluster ClusterInfo) Defaulted {
	var d Defaulted
	var own, inTemplate bool
	*labels, own = defaultClusterLabel(*labels, cluster.InfrastructureName)
	tmpl.Labels, inTemplate = defaultClusterLabel(tmpl.Labels, cluster.InfrastructureName)
	d.Labels = own || inTemplate
	d.ProviderSpec, d.Warnings = DefaultProviderSpec(&tmpl.Spec.ProviderSpec, cluster)
	return d
}

// defaultClusterLabel returns labels with the cluster-ID label set to
// infraName when it is missing, and whether it was added. The input map is
// not modified (a copy is returned when a label is added).
func defaultClusterLabel(labels map[string]string, infraName string) (map[string]string, bool) {
	if infraName == "" {
		return labels, false
	}
	if _, ok := labels[ClusterIDLabel]; ok {
		return labels, false
	}
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[ClusterIDLabel] = infraName
	return out, true
}
