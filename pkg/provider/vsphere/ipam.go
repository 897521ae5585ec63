package vsphere

import (
	"context"
	"fmt"
	"slices"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1" //nolint:staticcheck // SA1019: ipam v1beta1 is the version OpenShift's provider writes
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// claimName is OpenShift's name of the IPAddressClaim for pool p of network device d.
func claimName(m *machinev1beta1.Machine, d, p int) string {
	return fmt.Sprintf("%s-claim-%d-%d", m.Name, d, p)
}

// newClaim is the claim OpenShift creates: in the Machine's namespace, controlled by the Machine (so the
// garbage collector deletes it with the Machine), held by the ip-claim-protection finalizer until Delete
// releases it, for the pool the providerSpec names. No labels, as OpenShift's.
func newClaim(m *machinev1beta1.Machine, name string, pool machinev1beta1.AddressesFromPool) *ipamv1beta1.IPAddressClaim {
	return &ipamv1beta1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: m.Namespace, Name: name,
			OwnerReferences: []metav1.OwnerReference{*machineRef(m)},
			Finalizers:      []string{machinev1beta1.IPClaimProtectionFinalizer},
		},
		Spec: ipamv1beta1.IPAddressClaimSpec{PoolRef: corev1.TypedLocalObjectReference{
			APIGroup: new(pool.Group), Kind: pool.Resource, Name: pool.Name,
		}},
	}
}

func machineRef(m *machinev1beta1.Machine) *metav1.OwnerReference {
	return metav1.NewControllerRef(m, machinev1beta1.GroupVersion.WithKind("Machine"))
}

// ensureClaims gets or creates the claim of every pool of every device and returns them in device, then pool
// order. A claim found without owner references (an orphan) is given the Machine as controller, as OpenShift
// does; failing that is only logged.
func (a *Actuator) ensureClaims(ctx context.Context, m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec) ([]*ipamv1beta1.IPAddressClaim, error) {
	var claims []*ipamv1beta1.IPAddressClaim
	for d, dev := range spec.Network.Devices {
		for p, pool := range dev.AddressesFromPools {
			name := claimName(m, d, p)
			c := &ipamv1beta1.IPAddressClaim{}
			err := a.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, c)
			switch {
			case apierrors.IsNotFound(err):
				c = newClaim(m, name, pool)
				if err := a.client.Create(ctx, c); err != nil {
					return nil, fmt.Errorf("error while ensuring IPAddressClaim exists: unable to create IPAddressClaim %s: %w", name, err)
				}
				log.FromContext(ctx).Info("created an IPAddressClaim", "claim", name, "pool", pool.Name)
			case err != nil:
				return nil, fmt.Errorf("error while ensuring IPAddressClaim exists: error while getting IP address claim %s: %w", name, err)
			case len(c.OwnerReferences) == 0:
				c.OwnerReferences = []metav1.OwnerReference{*machineRef(m)}
				if err := a.client.Update(ctx, c); err != nil {
					log.FromContext(ctx).Error(err, "unable to adopt the orphaned IPAddressClaim", "claim", name)
				}
			}
			claims = append(claims, c)
		}
	}
	return claims, nil
}

// claimAddresses ensures the Machine's claims and records OpenShift's IPAddressClaimed condition in the
// providerStatus: True/IPAddressesClaimed once every claim names its IPAddress, else False/WaitingForIPAddress.
// It returns each device's addresses when all are bound, and nil while some are not.
func (a *Actuator) claimAddresses(ctx context.Context, m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec,
	st *machinev1beta1.VSphereMachineProviderStatus) ([]poolAddresses, error) {
	claims, err := a.ensureClaims(ctx, m, spec)
	if err != nil {
		return nil, err
	}
	outstanding := 0
	for _, c := range claims {
		if c.Status.AddressRef.Name == "" {
			outstanding++
		}
	}
	cond := claimedCondition(outstanding)
	cond.LastTransitionTime = metav1.NewTime(a.now().Truncate(time.Second))
	meta.SetStatusCondition(&st.Conditions, cond)
	if outstanding > 0 {
		return nil, nil
	}
	out := make([]poolAddresses, len(spec.Network.Devices))
	i := 0
	for d, dev := range spec.Network.Devices {
		for range dev.AddressesFromPools {
			c := claims[i]
			i++
			addr := &ipamv1beta1.IPAddress{}
			if err := a.client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: c.Status.AddressRef.Name}, addr); err != nil {
				return nil, fmt.Errorf("error retrieving bound IP address: unable to get IPAddress %s of claim %s: %w", c.Status.AddressRef.Name, c.Name, err)
			}
			out[d].addrs = append(out[d].addrs, fmt.Sprintf("%s/%d", addr.Spec.Address, addr.Spec.Prefix))
			if addr.Spec.Gateway != "" {
				out[d].gateway = addr.Spec.Gateway
			}
		}
	}
	return out, nil
}

// claimedCondition is OpenShift's IPAddressClaimed condition for a Machine with that many unbound claims.
func claimedCondition(outstanding int) metav1.Condition {
	if outstanding > 0 {
		return metav1.Condition{Type: string(machinev1beta1.IPAddressClaimedCondition), Status: metav1.ConditionFalse,
			Reason: machinev1beta1.WaitingForIPAddressReason, Message: fmt.Sprintf("Waiting on %d IP address claims to be bound", outstanding)}
	}
	return metav1.Condition{Type: string(machinev1beta1.IPAddressClaimedCondition), Status: metav1.ConditionTrue,
		Reason: machinev1beta1.IPAddressClaimedReason, Message: "All IP address claims are bound"}
}

// staticNetwork prepares the VM's network kargs for Create's clone and configure steps (empty without static
// configuration). While a claim is unbound it returns a RequeueAfterError: the Machine waits, with
// IPAddressClaimed=False in its providerStatus, instead of failing each call.
func (a *Actuator) staticNetwork(ctx context.Context, m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec,
	st *machinev1beta1.VSphereMachineProviderStatus) (string, error) {
	if !hasStaticIPConfiguration(spec) {
		return "", nil
	}
	pools, err := a.claimAddresses(ctx, m, spec, st)
	if err != nil {
		return "", err
	}
	if pools == nil {
		c := meta.FindStatusCondition(st.Conditions, string(machinev1beta1.IPAddressClaimedCondition))
		return "", provider.RequeueAfter(a.poll, c.Message)
	}
	return networkKargs(spec.Network.Devices, pools)
}

// releaseClaims removes the ip-claim-protection finalizer from every claim of the Machine's namespace the
// Machine controls, once its VM is gone, as OpenShift does: the garbage collector then deletes them with the
// Machine and the IPAM provider frees their addresses. No IPAM API served means no claims.
func (a *Actuator) releaseClaims(ctx context.Context, m *machinev1beta1.Machine) error {
	list := &ipamv1beta1.IPAddressClaimList{}
	if err := a.client.List(ctx, list, client.InNamespace(m.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("unable to remove finalizer for IP address claims: unable to list IPAddressClaims: %w", err)
	}
	for i := range list.Items {
		c := &list.Items[i]
		if !metav1.IsControlledBy(c, m) || !slices.Contains(c.Finalizers, machinev1beta1.IPClaimProtectionFinalizer) {
			continue
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == machinev1beta1.IPClaimProtectionFinalizer })
		if err := a.client.Update(ctx, c); err != nil {
			return fmt.Errorf("unable to remove finalizer for IP address claims: unable to update IPAddressClaim %s: %w", c.Name, err)
		}
		log.FromContext(ctx).Info("released the IPAddressClaim", "claim", c.Name)
	}
	return nil
}
