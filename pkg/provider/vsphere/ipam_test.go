package vsphere

import (
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1" //nolint:staticcheck // SA1019: ipam v1beta1 is OpenShift's version
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

// TestClaimedCondition: OpenShift's IPAddressClaimed condition, texts quoted from its reconciler.
func TestClaimedCondition(t *testing.T) {
	cases := []struct {
		outstanding int
		want        metav1.Condition
	}{
		{0, metav1.Condition{Type: "IPAddressClaimed", Status: metav1.ConditionTrue, Reason: "IPAddressesClaimed", Message: "All IP address claims are bound"}},
		{2, metav1.Condition{Type: "IPAddressClaimed", Status: metav1.ConditionFalse, Reason: "WaitingForIPAddress", Message: "Waiting on 2 IP address claims to be bound"}},
	}
	for _, tc := range cases {
		if got := claimedCondition(tc.outstanding); got != tc.want {
			t.Errorf("%d outstanding: %+v, want %+v", tc.outstanding, got, tc.want)
		}
	}
}

// poolSpec puts device 0 on pool-a and device 1 on pool-b and pool-c (a second address).
func poolSpec(s *machinev1beta1.VSphereMachineProviderSpec) {
	pool := func(name string) machinev1beta1.AddressesFromPool {
		return machinev1beta1.AddressesFromPool{Group: "ipam.example.com", Resource: "InClusterIPPool", Name: name}
	}
	s.Network.Devices = []machinev1beta1.NetworkDeviceSpec{
		{NetworkName: "DC0_DVPG1", AddressesFromPools: []machinev1beta1.AddressesFromPool{pool("pool-a")}, Nameservers: []string{"10.0.0.53"}},
		{NetworkName: vspheretest.Network, AddressesFromPools: []machinev1beta1.AddressesFromPool{pool("pool-b"), pool("pool-c")}},
	}
}

// bind does an IPAM provider's part for one claim: an IPAddress, then the claim's status naming it.
func (e *simEnv) bind(name, address string, prefix int, gateway string) {
	e.t.Helper()
	c := &ipamv1beta1.IPAddressClaim{}
	if err := e.kube.Get(e.ctx, client.ObjectKey{Namespace: testNamespace, Name: name}, c); err != nil {
		e.t.Fatal(err)
	}
	ip := &ipamv1beta1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name + "-ip"},
		Spec:       ipamv1beta1.IPAddressSpec{ClaimRef: corev1.LocalObjectReference{Name: c.Name}, PoolRef: c.Spec.PoolRef, Address: address, Prefix: prefix, Gateway: gateway},
	}
	if err := e.kube.Create(e.ctx, ip); err != nil {
		e.t.Fatal(err)
	}
	c.Status.AddressRef.Name = ip.Name
	if err := e.kube.Status().Update(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
}

// A Machine with addressesFromPools gets a claim per device and pool, named, owned and protected as
// OpenShift's; while any is unbound, Create only waits (a requeue, IPAddressClaimed=False with OpenShift's
// message) and clones nothing; once all are bound the clone carries the addresses in the network kargs; once
// its VM is destroyed Delete drops the claims' finalizer. Breaks if: Create cloned before every claim was bound,
// claims were named differently from OpenShift's <machine>-claim-<device>-<pool>, or Delete kept the finalizer.
func TestCreateWaitsForIPAddressClaims(t *testing.T) {
	e := newSimEnvWith(t, secondNetwork, Options{})
	m := e.newMachine("worker-0", poolSpec)
	err := call(m, e.a.Create, true)
	if !requeued(err) {
		t.Fatalf("Create without bound claims: %v, want a requeue", err)
	}
	mustContain(t, err, "Waiting on 3 IP address claims to be bound")
	if c := meta.FindStatusCondition(status(t, m).Conditions, "IPAddressClaimed"); c == nil || c.Reason != "WaitingForIPAddress" {
		t.Errorf("IPAddressClaimed = %+v, want False/WaitingForIPAddress", c)
	}
	if n := e.vmsNamed("worker-0"); n != 0 {
		t.Fatalf("%d VMs cloned before the claims were bound", n)
	}
	claims := &ipamv1beta1.IPAddressClaimList{}
	if err := e.kube.List(e.ctx, claims, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range claims.Items {
		names = append(names, c.Name+"→"+c.Spec.PoolRef.Name)
		ref := metav1.GetControllerOf(&c)
		if ref == nil || ref.UID != m.UID || ref.Kind != "Machine" || ref.APIVersion != "machine.openshift.io/v1beta1" || !*ref.BlockOwnerDeletion {
			t.Errorf("claim %s controller %+v, want the Machine", c.Name, ref)
		}
		if !slices.Equal(c.Finalizers, []string{"machine.openshift.io/ip-claim-protection"}) || len(c.Labels) != 0 ||
			*c.Spec.PoolRef.APIGroup != "ipam.example.com" || c.Spec.PoolRef.Kind != "InClusterIPPool" {
			t.Errorf("claim %s: finalizers %v, labels %v, poolRef %+v", c.Name, c.Finalizers, c.Labels, c.Spec.PoolRef)
		}
	}
	slices.Sort(names)
	if want := []string{"worker-0-claim-0-0→pool-a", "worker-0-claim-1-0→pool-b", "worker-0-claim-1-1→pool-c"}; !slices.Equal(names, want) {
		t.Errorf("claims %v, want %v", names, want)
	}

	e.bind("worker-0-claim-0-0", "192.168.10.20", 24, "192.168.10.1")
	e.bind("worker-0-claim-1-0", "fd00:10::20", 64, "fd00:10::1")
	if err := call(m, e.a.Create, true); !requeued(err) || e.vmsNamed("worker-0") != 0 {
		t.Fatalf("Create with one claim unbound: %v, %d VMs; want a requeue and none", err, e.vmsNamed("worker-0"))
	}
	mustContain(t, call(m, e.a.Create, true), "Waiting on 1 IP address claims to be bound")
	e.bind("worker-0-claim-1-1", "10.0.5.7", 16, "")
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(status(t, m).Conditions, "IPAddressClaimed"); c == nil || c.Status != metav1.ConditionTrue || c.Message != "All IP address claims are bound" {
		t.Errorf("IPAddressClaimed = %+v, want True", c)
	}
	want := "ip=192.168.10.20::192.168.10.1:255.255.255.0:::none nameserver=10.0.0.53 ip=[fd00:10::20]::[fd00:10::1]:64:::none ip=10.0.5.7:::255.255.0.0:::none "
	if got := e.extraConfig(e.vm("worker-0"), guestInfoNetworkKargs); got != want {
		t.Errorf("%s = %q, want %q", guestInfoNetworkKargs, got, want)
	}

	if err := e.until(m, e.a.Delete, false); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := e.kube.List(e.ctx, claims, client.InNamespace(testNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if len(c.Finalizers) != 0 {
			t.Errorf("claim %s keeps finalizers %v after its Machine's VM is gone", c.Name, c.Finalizers)
		}
	}
}

// An orphaned claim of the Machine's name (no owner references: restored from a backup, say) is adopted, as
// OpenShift does, and not created twice. Breaks if: ensureClaims created a claim over an existing one or left
// it without the Machine as controller.
func TestEnsureClaimsAdoptsOrphan(t *testing.T) {
	e := newSimEnvWith(t, secondNetwork, Options{})
	m := e.newMachine("worker-0", poolSpec)
	orphan := &ipamv1beta1.IPAddressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "worker-0-claim-0-0"}}
	if err := e.kube.Create(e.ctx, orphan); err != nil {
		t.Fatal(err)
	}
	spec, err := decodeSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.ensureClaims(e.ctx, m, spec); err != nil {
		t.Fatal(err)
	}
	got := &ipamv1beta1.IPAddressClaim{}
	if err := e.kube.Get(e.ctx, client.ObjectKeyFromObject(orphan), got); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(got, m) {
		t.Errorf("orphan owners %+v, want the Machine as controller", got.OwnerReferences)
	}
}
