package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaintenancePhase is the progress of a NodeMaintenance.
type MaintenancePhase string

const (
	// MaintenanceRunning means the node is being cordoned and drained, or the maintenance waits (for the
	// node, the etcd quorum guard, ...; see status.lastError).
	MaintenanceRunning MaintenancePhase = "Running"
	// MaintenanceSucceeded means the node is cordoned and drained. It stays so
	// until the NodeMaintenance is deleted.
	MaintenanceSucceeded MaintenancePhase = "Succeeded"
	// MaintenanceFailed means the maintenance cannot proceed (no node, or another NodeMaintenance holds it;
	// see status.lastError); it is retried when the cause goes away.
	MaintenanceFailed MaintenancePhase = "Failed"
)

// NodeMaintenanceSpec says which node to put into maintenance.
type NodeMaintenanceSpec struct {
	// nodeName is the name of the node to cordon and drain. It cannot be
	// changed after creation.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="updating spec.NodeName isn't allowed"
	NodeName string `json:"nodeName"`

	// reason is a free-text explanation of the maintenance.
	// +optional
	Reason string `json:"reason,omitempty"`

	// drainTimeout bounds the drain (an extension of this project, not part
	// of medik8s's API). When it expires, the pods still on the node (for
	// example held by a PodDisruptionBudget) are deleted without eviction and
	// the maintenance succeeds; status.lastError says so. Absent means wait
	// for the evictions forever. Measured from the start of the drain.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="drainTimeout must not be negative"
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	// namespace of the pod.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the pod.
	// +optional
	Name string `json:"name,omitempty"`
}

// NodeMaintenanceStatus is the observed progress of a NodeMaintenance.
type NodeMaintenanceStatus struct {
	// phase is Running, Succeeded or Failed.
	// +optional
	// +kubebuilder:validation:Enum=Running;Succeeded;Failed
	Phase MaintenancePhase `json:"phase,omitempty"`

	// drainProgress is the percentage of the pods to evict that are gone.
	// +optional
	DrainProgress int `json:"drainProgress,omitempty"`

	// lastUpdate is when the status last changed.
	// +optional
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`

	// lastError explains why the maintenance waits or failed; empty when it
	// progresses normally.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// drainStartTime is when the drain started; spec.drainTimeout counts
	// from it. An extension of this project, not part of medik8s's API.
	// +optional
	DrainStartTime *metav1.Time `json:"drainStartTime,omitempty"`

	// pendingPods are the names of the pods still to be evicted.
	// +optional
	PendingPods []string `json:"pendingPods,omitempty"`

	// pendingPodsRefs are the pods still to be evicted.
	// +optional
	PendingPodsRefs []PodReference `json:"pendingPodsRefs,omitempty"`

	// totalpods is the number of pods on the node when the drain started.
	// +optional
	TotalPods int `json:"totalpods,omitempty"`

	// evictionPods is the number of pods the drain has to evict.
	// +optional
	EvictionPods int `json:"evictionPods,omitempty"`

	// errorOnLeaseCount counts failed attempts to take or renew the node
	// lease (coordination.k8s.io Lease node-<nodeName> in medik8s-leases)
	// after the drain started; above 3 the maintenance fails and is
	// restarted once the lease is free again.
	// +optional
	ErrorOnLeaseCount int `json:"errorOnLeaseCount,omitempty"`
}

// NodeMaintenance puts one node into maintenance: it is cordoned, tainted
// medik8s.io/drain:NoSchedule, excluded from remediation and drained, until
// the NodeMaintenance is deleted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Drain Progress",type=integer,JSONPath=`.status.drainProgress`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeMaintenance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeMaintenanceSpec `json:"spec"`
	// +optional
	Status NodeMaintenanceStatus `json:"status,omitempty"`
}

// NodeMaintenanceList is a list of NodeMaintenances.
//
// +kubebuilder:object:root=true
type NodeMaintenanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMaintenance `json:"items"`
}
