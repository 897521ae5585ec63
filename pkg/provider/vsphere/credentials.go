package vsphere

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// DefaultCredentialsSecret is the Secret OpenShift's credentials request fills with vCenter credentials
// (the webhook's default for providerSpec.credentialsSecret).
const DefaultCredentialsSecret = "vsphere-cloud-credentials"

// credentials are a vCenter user and password.
type credentials struct {
	username, password string
}

// readCredentials reads <server>.username and <server>.password from the providerSpec's credentials Secret.
// A missing Secret is retried (it may come late); one without the keys is an InvalidConfiguration, as in OpenShift.
func readCredentials(ctx context.Context, c client.Reader, namespace string, spec *machinev1beta1.VSphereMachineProviderSpec) (credentials, error) {
	name := DefaultCredentialsSecret
	if spec.CredentialsSecret != nil && spec.CredentialsSecret.Name != "" {
		name = spec.CredentialsSecret.Name
	}
	server := spec.Workspace.Server
	userKey, passwordKey := server+".username", server+".password"
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return credentials{}, fmt.Errorf("credentials secret %s/%s not found: create it with keys %q and %q (or name another Secret in providerSpec.credentialsSecret)", namespace, name, userKey, passwordKey)
		}
		return credentials{}, fmt.Errorf("reading credentials secret %s/%s: %w", namespace, name, err)
	}
	for _, k := range [][2]string{{userKey, "user name"}, {passwordKey, "password"}} {
		if len(secret.Data[k[0]]) == 0 {
			return credentials{}, machine.InvalidConfiguration("secret %s/%s does not have %q field set: add the vCenter %s for server %q", namespace, name, k[0], k[1], server)
		}
	}
	return credentials{username: string(secret.Data[userKey]), password: string(secret.Data[passwordKey])}, nil
}
