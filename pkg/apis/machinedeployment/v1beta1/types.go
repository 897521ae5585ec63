package v1beta1

import (
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MachineDeploymentStrategyType is how old Machines are replaced by new ones.
// +kubebuilder:validation:Enum=RollingUpdate;Recreate;OnDelete
type MachineDeploymentStrategyType string

const (
	// RollingUpdateStrategy replaces Machines a few at a time, within
	// maxSurge and maxUnavailable.
	RollingUpdateStrategy MachineDeploymentStrategyType = "RollingUpdate"
	// RecreateStrategy deletes every old Machine before creating new ones.
	RecreateStrategy MachineDeploymentStrategyType = "Recreate"
	// OnDeleteStrategy creates a new Machine only when an old one is deleted
	// by someone else (a user, a MachineHealthCheck).
	OnDeleteStrategy MachineDeploymentStrategyType = "OnDelete"
)

// Labels and annotations of a MachineDeployment's MachineSets.
const (
	// MachineTemplateHashLabel, on each MachineSet, its selector and its Machines, is the hash of the
	// template it was made from: it tells the sets of one MachineDeployment apart.
	MachineTemplateHashLabel = "machine-template-hash"
	// RevisionAnnotation is the revision of the template a MachineSet
	// carries (and, on the MachineDeployment, the current revision).
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a MachineSet
	// carried (a rollback reuses the set and gives it a new revision).
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the MachineDeployment's replicas when the
	// MachineSet was last scaled: how proportional scaling finds a resize.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas + maxSurge when the set was last
	// scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// DisableMachineCreateAnnotation ("true") stops a MachineSet from creating Machines (scaling down still
	// works): OnDelete puts it on the old sets (docs/machinedeployment.md).
	DisableMachineCreateAnnotation = "machine.openshift.io/disable-machine-create"
	// FreezeLabel (value FreezeLabelValue) marks a frozen MachineSet or MachineDeployment, as FrozenCondition
	// does (machine-controller-manager's label; docs/safety.md).
	FreezeLabel      = "freeze"
	FreezeLabelValue = "True"
)

// Condition types and reasons of a MachineDeployment.
const (
	// AvailableCondition is True while at least replicas − maxUnavailable
	// Machines are available.
	AvailableCondition machinev1beta1.ConditionType = "Available"
	// ProgressingCondition says whether the rollout advances.
	ProgressingCondition machinev1beta1.ConditionType = "Progressing"
	// FrozenCondition is True while the safety controller keeps the
	// MachineDeployment's sets from creating Machines (overshoot).
	FrozenCondition machinev1beta1.ConditionType = "Frozen"

	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	ReasonNewMachineSetCreated       = "NewMachineSetCreated"
	ReasonFoundNewMachineSet         = "FoundNewMachineSet"
	ReasonMachineSetUpdated          = "MachineSetUpdated"
	ReasonNewMachineSetAvailable     = "NewMachineSetAvailable"
	ReasonMachineSetCreateError      = "MachineSetCreateError"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
)

// The bounds of maxSurge and maxUnavailable (docs/machinedeployment.md): a number at most
// MaxRollingUpdateCount, a percentage at most MaxRollingUpdatePercent.
const (
	MaxRollingUpdateCount   = 10000
	MaxRollingUpdatePercent = 100
)

// RollingUpdateMachineDeployment bounds a rolling update.
type RollingUpdateMachineDeployment struct {
	// maxUnavailable is how many Machines (a number, or a percentage of
	// replicas rounded down) may be unavailable during the update: 0 to
	// 10000, or 0% to 100%. It cannot be 0 when maxSurge is 0. Defaults to 25%.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 10000 : self.matches('^0*(100|[1-9]?[0-9])%$')",message="must be an integer from 0 to 10000 or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// maxSurge is how many Machines (a number, or a percentage of replicas
	// rounded up) may exist above replicas during the update: 0 to 10000, or
	// 0% to 100%; more than replicas acts as replicas. Defaults to 25%.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 10000 : self.matches('^0*(100|[1-9]?[0-9])%$')",message="must be an integer from 0 to 10000 or a percentage from 0% to 100%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// MachineDeploymentStrategy is how a changed template reaches the Machines.
type MachineDeploymentStrategy struct {
	// type is RollingUpdate (default), Recreate or OnDelete.
	// +optional
	Type MachineDeploymentStrategyType `json:"type,omitempty"`
	// rollingUpdate bounds a RollingUpdate; only allowed with that type.
	// +optional
	RollingUpdate *RollingUpdateMachineDeployment `json:"rollingUpdate,omitempty"`
}

// MachineDeploymentSpec is the desired state of a MachineDeployment.
type MachineDeploymentSpec struct {
	// replicas is the number of Machines wanted. Defaults to 1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`
	// selector selects the Machines (and MachineSets) of this deployment;
	// it must match the template's labels and cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable: its MachineSets and Machines would no longer be selected; create a new MachineDeployment instead"
	Selector metav1.LabelSelector `json:"selector"`
	// template is the Machine every MachineSet of the current revision
	// creates. Changing it (other than its labels' template hash) starts a
	// rollout.
	Template machinev1beta1.MachineTemplateSpec `json:"template"`
	// strategy is how old Machines are replaced.
	// +optional
	Strategy MachineDeploymentStrategy `json:"strategy,omitempty"`
	// minReadySeconds is how long a new Machine's Node must be Ready before
	// the Machine counts as available. Defaults to 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// revisionHistoryLimit is how many old, scaled-down MachineSets are kept
	// for a rollback. Defaults to 10.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// paused stops the rollout where it is; scaling still happens.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// progressDeadlineSeconds is how long a rollout may go without progress
	// before Progressing turns False (ProgressDeadlineExceeded); the rollout
	// goes on. Defaults to 600.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// MachineDeploymentStatus is the observed state of a MachineDeployment.
type MachineDeploymentStatus struct {
	// observedGeneration is the generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// labelSelector is spec.selector as a string, for the scale subresource.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// replicas is the number of Machines of every set of this deployment.
	// +optional
	Replicas int32 `json:"replicas"`
	// updatedReplicas is the number of Machines of the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// readyReplicas is the number of Machines whose Node is Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// availableReplicas is the number of Machines ready for at least
	// minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`
	// unavailableReplicas is replicas wanted minus available (at least 0).
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas"`
	// collisionCount counts template hash collisions; it is mixed into the
	// hash so that a new MachineSet name is found.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// conditions: Available, Progressing, Frozen.
	// +optional
	Conditions []machinev1beta1.Condition `json:"conditions,omitempty"`
}

// MachineDeployment rolls a set of Machines from one template to the next
// through MachineSets, as a Deployment does with ReplicaSets.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machinedeployments,shortName=md,scope=Namespaced
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=".status.updatedReplicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=".status.availableReplicas"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type MachineDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineDeploymentSpec   `json:"spec,omitempty"`
	Status MachineDeploymentStatus `json:"status,omitempty"`
}

// MachineDeploymentList is a list of MachineDeployments.
//
// +kubebuilder:object:root=true
type MachineDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDeployment `json:"items"`
}
