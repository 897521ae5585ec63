package config

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterVersionName is the ClusterVersion the cluster version operator
// runs from. The installer creates it before the cluster version operator
// applies any manifest, so it exists from the first second of an OpenShift
// cluster and never on vanilla Kubernetes (the root kustomization installs
// its CRD only).
const ClusterVersionName = "version"

// NodeMaintenanceCRDName is the CRD of medik8s' NodeMaintenance API, which
// this operator installs unless the node-maintenance-operator (OLM) did.
const NodeMaintenanceCRDName = "nodemaintenances.nodemaintenance.medik8s.io"

// revertManager is the field manager apply uses for updates that remove
// fields others added (apply.RevertManagerSuffix; apply imports config).
const revertManager = FieldManager + "-revert"

// ForeignManagers returns the field managers of an existing object's
// content (status writers such as the API server marking a CRD Established
// do not count) that this operator never wrote (sorted, "unknown" when the
// object records none), or
// nil when the object is absent (nil) or this operator's field manager has an
// entry in it. A CRD someone else created before this operator ever applied
// it (OLM installing the node-maintenance-operator) is theirs: the operator
// neither applies nor prunes it.
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

// joinManagers renders field manager names for messages.
func joinManagers(managers []string) string { return strings.Join(managers, ", ") }

// ForCRDs is the part of the Config that decides which CRDs the operator
// installs (OpenShift, NodeMaintenanceForeign): it needs no valid input, so
// the CRDs are installed even while the Infrastructure is missing.
func ForCRDs(in Inputs) Config {
	cfg := Config{Namespace: in.Namespace, OpenShift: in.OpenShift}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if foreign := ForeignManagers(in.NodeMaintenanceCRD); foreign != nil {
		cfg.NodeMaintenanceForeign = true
		cfg.NodeMaintenanceOwner = joinManagers(foreign)
	}
	return cfg
}
