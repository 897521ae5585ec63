package machine

import (
	"context"
	"time"
)

// Instance is one provider instance, as an InstanceLister reports it.
type Instance struct {
	// ProviderID is what spec.providerID of the Machine that owns the
	// instance is (or will be).
	ProviderID string
	// Name is the instance's name; for this project's providers, the name
	// of the Machine it was created for.
	Name string
	// CreatedAt is when the instance was created; zero when the provider
	// cannot tell (such an instance is never collected).
	CreatedAt time.Time
}

// InstanceLister is an optional provider interface for the orphan instance
// collection of package safety (docs/safety.md): the provider lists the
// cluster's instances, and deletes one that no Machine owns.
type InstanceLister interface {
	// ListInstances lists the instances of this cluster that Machines of
	// namespace own or would own (the whole cluster's when namespace is
	// empty, or when the provider cannot tell namespaces apart).
	ListInstances(ctx context.Context, namespace string) ([]Instance, error)
	// DeleteInstance deletes inst. It must delete nothing when the
	// instance named inst.Name is no longer the one of inst.ProviderID (a
	// new one replaced it), and treat a missing instance as deleted.
	DeleteInstance(ctx context.Context, inst Instance) error
}
