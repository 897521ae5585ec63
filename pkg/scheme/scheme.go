// Package scheme builds the runtime.Scheme of the operator, operands and tests.
package scheme

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1" //nolint:staticcheck // SA1019: ipam v1beta1 is the version OpenShift's vSphere provider uses

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
)

// New returns a new scheme with every API group the project uses (a fresh
// one per caller: no global mutable state).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(configv1.Install(s))
	utilruntime.Must(machinev1beta1.Install(s))
	utilruntime.Must(nmv1beta1.AddToScheme(s))
	utilruntime.Must(mdv1beta1.AddToScheme(s))
	utilruntime.Must(ipamv1beta1.AddToScheme(s)) // the vSphere provider's IP address claims
	return s
}
