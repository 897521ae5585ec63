package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of NodeMaintenance.
	GroupName = "nodemaintenance.medik8s.io"
	// Version is the API version of this package.
	Version = "v1beta1"
	// Kind is the kind of a NodeMaintenance.
	Kind = "NodeMaintenance"
)

var (
	// GroupVersion is nodemaintenance.medik8s.io/v1beta1.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// SchemeBuilder registers this package's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &NodeMaintenance{}, &NodeMaintenanceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
