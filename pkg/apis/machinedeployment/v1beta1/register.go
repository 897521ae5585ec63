package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is OpenShift's Machine API group.
	GroupName = "machine.openshift.io"
	// Version is the API version of this package.
	Version = "v1beta1"
	// Kind is the kind of a MachineDeployment.
	Kind = "MachineDeployment"
)

var (
	// GroupVersion is machine.openshift.io/v1beta1.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// SchemeBuilder registers this package's types. The group's other kinds
	// (Machine, MachineSet, ...) come from github.com/openshift/api.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &MachineDeployment{}, &MachineDeploymentList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
