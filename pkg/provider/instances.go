package provider

import (
	"context"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// Instance is one provider instance, as an InstanceLister reports it.
type Instance struct {
	ProviderID string    // the owning Machine's spec.providerID, now or to be
	Name       string    // for this project's providers, the name of the Machine it was created for
	CreatedAt  time.Time // zero when the provider cannot tell: such an instance is never collected
	// Owner is the ownership mark the provider wrote when it created the instance; zero (no mark: an
	// installer's, a user's, another tool's instance) is never collected.
	Owner Owner
}

// InstanceLister is an optional provider interface for the orphan collection (docs/safety.md).
type InstanceLister interface {
	// ListInstances lists the instances in the places Machines of namespace create them (all when it cannot
	// tell), with their ownership marks; the collector checks each mark against the Machines of its namespace.
	ListInstances(ctx context.Context, namespace string) ([]Instance, error)
	// DeleteInstance deletes inst unless inst.Name now names another instance; a missing one is deleted.
	DeleteInstance(ctx context.Context, inst Instance) error
}

// Owner is the ownership mark a provider writes on each instance it creates: the Machine's namespace, name
// and UID, as "<namespace>/<name>/<uid>". A Machine of the same name but another UID does not own it.
type Owner struct {
	Namespace, Name string
	UID             types.UID
}

// OwnerOf returns m's mark.
func OwnerOf(m *machinev1beta1.Machine) Owner {
	return Owner{Namespace: m.Namespace, Name: m.Name, UID: m.UID}
}

// IsZero reports an instance without (or with an unreadable) mark: never this project's to collect.
func (o Owner) IsZero() bool { return o == Owner{} }

// Owns reports whether o is m's mark.
func (o Owner) Owns(m *machinev1beta1.Machine) bool { return !o.IsZero() && o == OwnerOf(m) }

func (o Owner) String() string {
	if o.IsZero() {
		return ""
	}
	return o.Namespace + "/" + o.Name + "/" + string(o.UID)
}

// ParseOwner reads a mark written by Owner.String; anything else is the zero Owner.
func ParseOwner(s string) Owner {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Owner{}
	}
	return Owner{Namespace: parts[0], Name: parts[1], UID: types.UID(parts[2])}
}
