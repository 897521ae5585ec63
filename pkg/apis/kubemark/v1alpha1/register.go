package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of the kubemark provider types.
	GroupName = "kubemark.machine-api-operator.io"
	// Version is the API version of this package.
	Version = "v1alpha1"

	// ProviderSpecKind is the kind of a kubemark Machine's providerSpec.value.
	ProviderSpecKind = "KubemarkMachineProviderSpec"
	// ProviderStatusKind is the kind of a kubemark Machine's status.providerStatus.
	ProviderStatusKind = "KubemarkMachineProviderStatus"
)

var (
	// GroupVersion is kubemark.machine-api-operator.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KubemarkMachineProviderSpec{}, &KubemarkMachineProviderStatus{})
	return nil
}
