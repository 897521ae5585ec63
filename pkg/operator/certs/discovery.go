package certs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// The OpenShift service-ca operator's API; its presence means the service-ca
// operator issues the webhook serving certificates and injects the CA bundle.
const (
	ServiceCAGroupVersion = "operator.openshift.io/v1"
	ServiceCAResource     = "servicecas"
)

// DetectServiceCA reports whether the cluster serves the resource servicecas
// in operator.openshift.io/v1, that is whether OpenShift's service-ca operator
// provides the webhook certificates (true) or the operator must issue them
// itself with a Manager (false). Discovery errors other than "group version
// not found" are returned: the caller must not guess.
func DetectServiceCA(ctx context.Context, dc discovery.DiscoveryInterface) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	list, err := dc.ServerResourcesForGroupVersion(ServiceCAGroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", ServiceCAGroupVersion, err)
	}
	if list == nil {
		return false, nil
	}
	for _, r := range list.APIResources {
		if r.Name == ServiceCAResource {
			return true, nil
		}
	}
	return false, nil
}
