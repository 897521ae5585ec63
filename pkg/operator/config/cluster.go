package config

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterVersionName is the ClusterVersion that exists from the first second
// of an OpenShift cluster and never on vanilla. See docs/architecture.md.
const ClusterVersionName = "version"

// NodeMaintenanceCRDName is the CRD of medik8s' NodeMaintenance API, which
// this operator installs unless the node-maintenance-operator (OLM) did.
const NodeMaintenanceCRDName = "nodemaintenances.nodemaintenance.medik8s.io"

// revertManager is apply's revert field manager (apply imports config).
const revertManager = FieldManager + "-revert"

// ForeignManagers returns the sorted field managers of obj ("unknown" if none)
// when this operator never wrote it (theirs: never applied nor pruned), else nil.
func ForeignManagers(obj *metav1.PartialObjectMetadata) []string {
	if obj == nil {
		return nil
	}
	var others []string
	for _, e := range obj.ManagedFields {
		if e.Manager == FieldManager || e.Manager == revertManager {
			return nil
		}
		if e.Subresource == "" && !slices.Contains(others, e.Manager) {
			others = append(others, e.Manager)
		}
	}
	if len(others) == 0 {
		return []string{"unknown"}
	}
	slices.Sort(others)
	return others
}

// ForCRDs is the part of the Config that decides which CRDs the operator
// installs; it needs no valid input.
func ForCRDs(in Inputs) Config {
	cfg := Config{Namespace: cmp.Or(in.Namespace, DefaultNamespace), OpenShift: in.OpenShift}
	if foreign := ForeignManagers(in.NodeMaintenanceCRD); foreign != nil {
		cfg.NodeMaintenanceForeign = true
		cfg.NodeMaintenanceOwner = strings.Join(foreign, ", ")
	}
	return cfg
}
