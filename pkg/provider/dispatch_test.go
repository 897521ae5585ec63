package provider

import (
	"context"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kindServer is a fake provider serving kinds that counts its calls by operation.
type kindServer struct {
	kinds []schema.GroupKind
	calls map[string]int
}

func newKindServer(kinds ...schema.GroupKind) *kindServer {
	return &kindServer{kinds: kinds, calls: map[string]int{}}
}

func (k *kindServer) ProviderSpecKinds() []schema.GroupKind { return k.kinds }
func (k *kindServer) Calls(op string) int                   { return k.calls[op] }

func (k *kindServer) Create(context.Context, *machinev1beta1.Machine) error {
	k.calls[opCreate]++
	return nil
}

func (k *kindServer) Update(context.Context, *machinev1beta1.Machine) error {
	k.calls[opUpdate]++
	return nil
}

func (k *kindServer) Exists(context.Context, *machinev1beta1.Machine) (bool, error) {
	k.calls[opExists]++
	return true, nil
}

func (k *kindServer) Delete(context.Context, *machinev1beta1.Machine) error {
	k.calls[opDelete]++
	return nil
}

const (
	opCreate = "Create"
	opUpdate = "Update"
	opExists = "Exists"
	opDelete = "Delete"
)

// TestProvidersDispatchByProviderSpec: each Machine reaches the provider of
// its providerSpec type and no other; an untyped one goes to the first
// provider (which reports what is wrong with it); a type nobody serves is an
// error, never a call. Breaks if: providerFor matched on the group alone (the
// AWS Machine would reach vsphere).
func TestProvidersDispatchByProviderSpec(t *testing.T) {
	tests := []struct {
		name                 string
		value                string
		wantKubemark, wantVS int
		wantErr              bool
	}{
		{"kubemark", `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"KubemarkMachineProviderSpec"}`, 1, 0, false},
		{"kubemark, a kind of its group it will refuse", `{"apiVersion":"kubemark.machine-api-operator.io/v1alpha1","kind":"Other"}`, 1, 0, false},
		{"vSphere", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec"}`, 0, 1, false},
		{"untyped goes to the first provider", `{"cpu":"1"}`, 1, 0, false},
		{"AWS reaches nobody", `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kubemark := newKindServer(schema.GroupKind{Group: "kubemark.machine-api-operator.io"})
			vs := newKindServer(schema.GroupKind{Group: "machine.openshift.io", Kind: "VSphereMachineProviderSpec"})
			p := NewProviders(kubemark, vs)
			m := &machinev1beta1.Machine{Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(tt.value)}}}}
			ctx := context.Background()
			_, existsErr := p.Exists(ctx, m)
			errs := []error{existsErr, p.Create(ctx, m), p.Update(ctx, m), p.Delete(ctx, m)}
			for i, err := range errs {
				if (err != nil) != tt.wantErr {
					t.Errorf("call %d: error %v, want error %v", i, err, tt.wantErr)
				}
			}
			for _, op := range []string{opCreate, opUpdate, opExists, opDelete} {
				if got := kubemark.Calls(op); got != tt.wantKubemark {
					t.Errorf("kubemark %s calls %d, want %d", op, got, tt.wantKubemark)
				}
				if got := vs.Calls(op); got != tt.wantVS {
					t.Errorf("vsphere %s calls %d, want %d", op, got, tt.wantVS)
				}
			}
		})
	}
}

// TestProvidersServeTheUnion: the controller sees every provider's kinds.
func TestProvidersServeTheUnion(t *testing.T) {
	vs := newKindServer(schema.GroupKind{Group: "machine.openshift.io", Kind: "VSphereMachineProviderSpec"})
	p := NewProviders(newKindServer(schema.GroupKind{Group: "kubemark.machine-api-operator.io"}), vs)
	got := DescribeKinds(p.ProviderSpecKinds())
	if want := "kubemark.machine-api-operator.io, VSphereMachineProviderSpec (machine.openshift.io)"; got != want {
		t.Errorf("kinds %q, want %q", got, want)
	}
}
