package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults applied to a providerSpec that leaves a field out.
const (
	// DefaultCPU is the CPU capacity of a node when cpu is not set.
	DefaultCPU = "2"
	// DefaultMemory is the memory capacity of a node when memory is not set.
	DefaultMemory = "4Gi"
	// DefaultPods is the pod capacity of a node when pods is not set.
	DefaultPods = "110"
)

// KubemarkMachineProviderSpec is the providerSpec.value of a kubemark Machine:
// the simulated instance that the kubemark provider registers as a Node. The
// provider decodes it strictly: an unknown field, a wrong apiVersion or kind,
// or a bad value fails the Machine with reason InvalidConfiguration.
//
// +kubebuilder:object:root=true
type KubemarkMachineProviderSpec struct {
	// apiVersion must be kubemark.machine-api-operator.io/v1alpha1 and kind
	// must be KubemarkMachineProviderSpec.
	metav1.TypeMeta `json:",inline"`

	// cpu is the node's CPU capacity (and allocatable), such as "4" or "500m".
	// It must be positive.
	// +optional
	// +kubebuilder:default="2"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// memory is the node's memory capacity (and allocatable), such as "8Gi".
	// It must be positive.
	// +optional
	// +kubebuilder:default="4Gi"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
	Memory *resource.Quantity `json:"memory,omitempty"`

	// pods is how many pods the node can run: a positive whole number, given
	// as a number (110) or a string ("110").
	// +optional
	// +kubebuilder:default=110
	// +kubebuilder:validation:XIntOrString
	Pods *resource.Quantity `json:"pods,omitempty"`

	// bootDelay is how long after the Machine's creation the Node is
	// registered, such as "30s" or "2m". Until then Create asks to be called
	// again and the Machine stays Provisioning. The delay counts from the
	// Machine's creationTimestamp, so it survives controller restarts.
	// Must not be negative; 0 (the default) registers the Node at once.
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	BootDelay *metav1.Duration `json:"bootDelay,omitempty"`

	// health simulates a node failure: after a while the node is no longer
	// kept Ready. Absent means the node stays healthy.
	// +optional
	Health *HealthPolicy `json:"health,omitempty"`
}

// HealthMode says what happens after a node turned unhealthy.
// +kubebuilder:validation:Enum=Once;Periodic
type HealthMode string

const (
	// HealthModeOnce means the node turns unhealthy once, unhealthyAfter after it
	// registered, and stays unhealthy.
	HealthModeOnce HealthMode = "Once"
	// HealthModePeriodic means the node alternates, healthy for unhealthyAfter,
	// then unhealthy for unhealthyFor, then healthy again, and so on.
	HealthModePeriodic HealthMode = "Periodic"
)

// HealthPolicy is a schedule of simulated node failures, counted from the
// Node's registration (its creationTimestamp).
type HealthPolicy struct {
	// unhealthyAfter is how long after registration the node stops being kept
	// Ready, such as "10m". 0 (the default) means never; it must be positive
	// when mode is Periodic.
	// +optional
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	UnhealthyAfter *metav1.Duration `json:"unhealthyAfter,omitempty"`

	// mode is Once (the default: the node stays unhealthy) or Periodic (the
	// node recovers after unhealthyFor, and fails again unhealthyAfter later).
	// +optional
	// +kubebuilder:default=Once
	Mode HealthMode `json:"mode,omitempty"`

	// unhealthyFor is, in Periodic mode, how long each unhealthy spell lasts.
	// It defaults to unhealthyAfter and must be positive. It may only be set
	// when mode is Periodic.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	UnhealthyFor *metav1.Duration `json:"unhealthyFor,omitempty"`
}

// InstanceState is the state of a kubemark instance, as reported in
// KubemarkMachineProviderStatus.state.
// +kubebuilder:validation:Enum=Booting;Running;Unhealthy
type InstanceState string

const (
	// InstanceBooting means the Node is not registered yet (bootDelay has not
	// elapsed).
	InstanceBooting InstanceState = "Booting"
	// InstanceRunning means the Node is registered and kept Ready.
	InstanceRunning InstanceState = "Running"
	// InstanceUnhealthy means the health simulation stopped keeping the Node Ready.
	InstanceUnhealthy InstanceState = "Unhealthy"
)

// KubemarkMachineProviderStatus is the status.providerStatus the kubemark
// provider writes on a Machine. Every field is derived from the Node and the
// providerSpec, so it is the same after a controller restart.
//
// +kubebuilder:object:root=true
type KubemarkMachineProviderStatus struct {
	// apiVersion is kubemark.machine-api-operator.io/v1alpha1 and kind is
	// KubemarkMachineProviderStatus.
	metav1.TypeMeta `json:",inline"`

	// nodeName is the name of the Node registered for the Machine (the
	// Machine's name). Empty while booting.
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// registeredAt is when the Node was registered (its creationTimestamp).
	// The health schedule counts from it.
	// +optional
	RegisteredAt *metav1.Time `json:"registeredAt,omitempty"`

	// state is Booting, Running or Unhealthy.
	// +optional
	State InstanceState `json:"state,omitempty"`

	// nextHealthTransition is when the health simulation next changes the
	// node's health; absent when it never will.
	// +optional
	NextHealthTransition *metav1.Time `json:"nextHealthTransition,omitempty"`
}
