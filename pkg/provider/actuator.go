// Package provider is the contract between the machine controller and the providers (docs/architecture.md): the
// Actuator a provider implements, the errors it returns, the optional instance lister of the orphan collection,
// and the dispatcher that serves several providers from one controller. Providers (pkg/provider/<name>) and the
// safety controllers import this package, never the machine controller that calls them.
package provider

import (
	"context"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Actuator is what a provider implements. Every method must be idempotent: the controller calls them
// again after errors, restarts and leader changes.
//
// Create and Update may set, on the Machine they get, spec.providerID (stable and unique),
// status.addresses (at least the Node's InternalIP) and status.providerStatus; the controller persists
// exactly these, and alone writes phase, conditions, errors, lastUpdated and the finalizer.
//
// Errors: an InvalidConfiguration Error from Create fails the Machine (retrying cannot help; name
// the field), as does one from Exists before the Machine was provisioned; from Update it sets
// ProviderUpdated=False. A terminal failure from Create, Update or Exists is an error returned with the
// Machine's status.phase set to Failed (Failed does both: OpenShift's contract); the Machine then fails with
// errorReason/errorMessage from the error. A *RequeueAfterError is a provider-side wait, not an error; any
// other is retried with backoff. The deletion path fails nothing: it retries.
// A provider should also implement SpecServer, so it never gets another provider's Machine.
type Actuator interface {
	// Create creates the instance once Exists reported false, maybe on a stale view of a Machine provisioned
	// meanwhile: it first looks for the instance it made for it (kubemark: the Node of its name; vSphere: its UID).
	Create(ctx context.Context, machine *machinev1beta1.Machine) error
	// Update brings an existing instance in line with the Machine and refreshes what Create may set.
	Update(ctx context.Context, machine *machinev1beta1.Machine) error
	// Exists reports whether the instance exists: false only when it is certainly gone (or never created).
	Exists(ctx context.Context, machine *machinev1beta1.Machine) (bool, error)
	// Delete starts or completes deleting the instance; the controller calls Exists until it is false.
	Delete(ctx context.Context, machine *machinev1beta1.Machine) error
}

// SpecServer is an Actuator that names the providerSpec types it serves (every provider should);
// without it, or with no kind, the Actuator gets every Machine.
type SpecServer interface {
	// ProviderSpecKinds returns the providerSpec.value types the provider decodes; an empty Kind is every
	// kind of the group, only for a group of its own (a shared one, machine.openshift.io, names the kind).
	ProviderSpecKinds() []schema.GroupKind
}

// ServingActuator is an Actuator that names the providerSpec types it serves: what NewProviders dispatches to.
type ServingActuator interface {
	Actuator
	SpecServer
}

// Gate holds back the provider calls that create or delete instances while Frozen (package safety's
// API-server freeze), so none happens on a view of the cluster the controller cannot update.
type Gate interface {
	Frozen() bool
}

// InstanceStateAnnotation on a Machine is the provider's word for its instance's state ("Unknown" once Failed).
const InstanceStateAnnotation = "machine.openshift.io/instance-state"

// IsProvisioned reports whether the provider ever reported the Machine's instance (providerID or addresses).
func IsProvisioned(m *machinev1beta1.Machine) bool {
	return (m.Spec.ProviderID != nil && *m.Spec.ProviderID != "") || len(m.Status.Addresses) > 0
}
