// Package scheme builds the runtime.Scheme shared by the operator, the operands
// and the tests: the Kubernetes built-in types plus the OpenShift config and
// machine APIs and this project's NodeMaintenance and MachineDeployment APIs.
package scheme

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	machinedeploymentv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	nodemaintenancev1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

// New returns a new scheme with every API group the project uses registered.
// Each caller gets its own instance, so nothing is shared or mutated globally.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(configv1.Install(s))
	utilruntime.Must(machinev1beta1.Install(s))
	utilruntime.Must(nodemaintenancev1beta1.AddToScheme(s))
	utilruntime.Must(machinedeploymentv1beta1.AddToScheme(s))
	return s
}
