package controllertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1" //nolint:staticcheck // SA1019: ipam v1beta1 is OpenShift's version
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// ipamCRDs reads testdata/ipam-crds.yaml: IPAddressClaim and IPAddress, as an IPAM provider installs them.
func ipamCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(filepath.Join("testdata", "ipam-crds.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
			return nil, fmt.Errorf("decoding testdata/ipam-crds.yaml: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// ipamPool is one pool of the test's IPAM provider: addresses base+1, base+2, ... with a prefix and gateway.
type ipamPool struct {
	base    string // the address without its last group, "192.168.10." or "fd00:10::"
	prefix  int
	gateway string
}

// ipamProvider is a small IPAM provider: for each unbound claim of the namespace it creates an IPAddress (named
// after the claim) from the claim's pool, then binds the claim to it, as a real provider does.
type ipamProvider struct {
	c     client.Client
	pools map[string]ipamPool
	mu    sync.Mutex
	next  map[string]int
}

func (p *ipamProvider) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &ipamv1beta1.IPAddressClaim{}
	if err := p.c.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if claim.DeletionTimestamp != nil || claim.Status.AddressRef.Name != "" {
		return reconcile.Result{}, nil
	}
	pool, ok := p.pools[claim.Spec.PoolRef.Name]
	if !ok {
		return reconcile.Result{}, fmt.Errorf("claim %s: no pool %q", claim.Name, claim.Spec.PoolRef.Name)
	}
	addr := &ipamv1beta1.IPAddress{}
	err := p.c.Get(ctx, req.NamespacedName, addr)
	if apierrors.IsNotFound(err) {
		p.mu.Lock()
		p.next[claim.Spec.PoolRef.Name]++
		n := p.next[claim.Spec.PoolRef.Name]
		p.mu.Unlock()
		addr = &ipamv1beta1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: claim.Name},
			Spec: ipamv1beta1.IPAddressSpec{ClaimRef: corev1.LocalObjectReference{Name: claim.Name}, PoolRef: claim.Spec.PoolRef,
				Address: fmt.Sprint(pool.base, 19+n), Prefix: pool.prefix, Gateway: pool.gateway},
		}
		err = p.c.Create(ctx, addr)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	claim.Status.AddressRef.Name = addr.Name
	return reconcile.Result{}, p.c.Status().Update(ctx, claim)
}

// startIPAM runs the test's IPAM provider on the test namespace's claims until the test ends.
func startIPAM(t *testing.T, pools map[string]ipamPool) {
	t.Helper()
	mgr := env.NewManager(t, nil, cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	p := &ipamProvider{c: mgr.GetClient(), pools: pools, next: map[string]int{}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("test-ipam").For(&ipamv1beta1.IPAddressClaim{}).Complete(p); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)
}

// claims lists the test namespace's IPAddressClaims, sorted by name.
func (f *fixture) claims(t *testing.T) []ipamv1beta1.IPAddressClaim {
	t.Helper()
	list := &ipamv1beta1.IPAddressClaimList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(namespace)); err != nil { // also in a cleanup, after t.Context ends
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b ipamv1beta1.IPAddressClaim) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// The IPAM path end to end, with the machine controller on envtest, vcsim and a small IPAM provider: a Machine
// whose two network devices take addresses from pools gets OpenShift's claims (one per device and pool,
// <machine>-claim-<device>-<pool>, controlled by the Machine, with the ip-claim-protection finalizer) and
// waits for them (reconciles without error, IPAddressClaimed=False/WaitingForIPAddress, no VM); once the IPAM
// provider binds them, the VM is cloned with one NIC per device on its port group and the addresses, gateways
// and nameservers in guestinfo.afterburn.initrd.network-kargs, and the Machine is Provisioned; deleted, its
// VM is destroyed and the claims lose their finalizer, so the garbage collector's delete (done here by the
// test: envtest runs no garbage collector) removes them. Breaks if: the Machine cloned before the claims were
// bound, Create returned an error while waiting, the kargs missed a pool's address, or Delete kept the
// finalizer (the claims would then stay after their delete).
func TestStaticIPsFromPools(t *testing.T) {
	f := newFixture(t, func(m *simulator.Model) { m.Portgroup = 2 })
	pool := func(name string) []machinev1beta1.AddressesFromPool {
		return []machinev1beta1.AddressesFromPool{{Group: "ipam.cluster.x-k8s.io", Resource: "InClusterIPPool", Name: name}}
	}
	m := f.machineWith(t, "worker-ip", func(s *machinev1beta1.VSphereMachineProviderSpec) {
		s.Network.Devices = []machinev1beta1.NetworkDeviceSpec{
			{NetworkName: "DC0_DVPG1", AddressesFromPools: pool("v4"), Nameservers: []string{"192.168.10.2"}},
			{NetworkName: vspheretest.Network, AddressesFromPools: pool("v6")},
		}
	})
	t.Cleanup(func() {
		for _, c := range f.claims(t) {
			c.Finalizers = nil
			_ = env.Client.Update(context.Background(), &c)
			_ = env.Client.Delete(context.Background(), &c)
		}
	})

	// No IPAM provider yet: the Machine waits.
	f.reconcileUntil(t, m, "waiting on 2 claims", func(got *machinev1beta1.Machine) error {
		st := &machinev1beta1.VSphereMachineProviderStatus{}
		if err := decodeStatus(got, st); err != nil {
			return err
		}
		c := meta.FindStatusCondition(st.Conditions, string(machinev1beta1.IPAddressClaimedCondition))
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "WaitingForIPAddress" || c.Message != "Waiting on 2 IP address claims to be bound" {
			return fmt.Errorf("IPAddressClaimed %+v", c)
		}
		return nil
	})
	for range 3 { // more reconciles change nothing and fail nothing
		if _, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
			t.Fatalf("a reconcile while waiting for the claims: %v", err)
		}
	}
	if n := f.vc.VMsNamed("worker-ip"); n != 0 {
		t.Fatalf("%d VMs cloned before the claims were bound", n)
	}
	stored := &machinev1beta1.Machine{}
	if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), stored); err != nil {
		t.Fatal(err)
	}
	claims := f.claims(t)
	var names []string
	for _, c := range claims {
		names = append(names, c.Name+"→"+c.Spec.PoolRef.Name)
		if !metav1.IsControlledBy(&c, stored) || !slices.Equal(c.Finalizers, []string{machinev1beta1.IPClaimProtectionFinalizer}) {
			t.Errorf("claim %s: owners %+v, finalizers %v; want the Machine as controller and %s", c.Name, c.OwnerReferences, c.Finalizers, machinev1beta1.IPClaimProtectionFinalizer)
		}
	}
	if want := []string{"worker-ip-claim-0-0→v4", "worker-ip-claim-1-0→v6"}; !slices.Equal(names, want) {
		t.Fatalf("claims %v, want %v", names, want)
	}

	startIPAM(t, map[string]ipamPool{
		"v4": {base: "192.168.10.", prefix: 24, gateway: "192.168.10.1"},
		"v6": {base: "fd00:10::", prefix: 64, gateway: "fd00:10::1"},
	})
	f.reconcileUntilPoweredOn(t, m, "worker-ip")
	vm := f.vc.VM("worker-ip")
	p := f.vc.Props(vm, "config.extraConfig", "config.hardware.device")
	var kargs string
	for _, o := range p.Config.ExtraConfig {
		if ov := o.GetOptionValue(); ov.Key == "guestinfo.afterburn.initrd.network-kargs" {
			kargs, _ = ov.Value.(string)
		}
	}
	if want := "ip=192.168.10.20::192.168.10.1:255.255.255.0:::none nameserver=192.168.10.2 ip=[fd00:10::20]::[fd00:10::1]:64:::none "; kargs != want {
		t.Errorf("network kargs %q, want %q", kargs, want)
	}
	if nics := object.VirtualDeviceList(p.Config.Hardware.Device).SelectByType((*types.VirtualEthernetCard)(nil)); len(nics) != 2 {
		t.Errorf("%d NICs, want one per network device", len(nics))
	}
	f.vc.SetGuestIP("worker-ip", "192.168.10.20")
	f.reconcileUntil(t, m, "Provisioned, IPAddressClaimed=True", func(got *machinev1beta1.Machine) error {
		st := &machinev1beta1.VSphereMachineProviderStatus{}
		if err := decodeStatus(got, st); err != nil {
			return err
		}
		c := meta.FindStatusCondition(st.Conditions, string(machinev1beta1.IPAddressClaimedCondition))
		if phase(got) != machinev1beta1.PhaseProvisioned || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("phase %q, IPAddressClaimed %+v", phase(got), c)
		}
		stored = got
		return nil
	})

	f.deleteUntilGone(t, stored)
	if n := f.vc.VMsNamed("worker-ip"); n != 0 {
		t.Errorf("%d VMs left after the Machine was deleted", n)
	}
	for _, c := range f.claims(t) { // the garbage collector's part: the Machine, their controller, is gone
		if len(c.Finalizers) != 0 {
			t.Errorf("claim %s keeps finalizers %v after its Machine was deleted", c.Name, c.Finalizers)
		}
		if err := env.Client.Delete(f.ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 10*time.Second, "the claims deleted", poll.Check(func() error {
		if n := len(f.claims(t)); n != 0 {
			return fmt.Errorf("%d claims left", n)
		}
		return nil
	}))
}
