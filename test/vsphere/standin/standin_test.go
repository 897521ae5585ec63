package standin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestKubeletRegistersAndRemovesNodes: a powered-on VM in the cluster's folder
// gets a guest IP and a Node with that InternalIP and its vsphere://
// providerID; a VM outside the folder and a powered-off one get nothing;
// powering the VM off deletes its Node, and another Node is never touched.
func TestKubeletRegistersAndRemovesNodes(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{})
	vc := vspheretest.Start(t, nil)
	root, err := vc.Finder.Folder(ctx, vspheretest.Folder)
	if err != nil {
		t.Fatal(err)
	}
	folder, err := root.CreateFolder(ctx, "cluster-x")
	if err != nil {
		t.Fatal(err)
	}
	tpl := vc.VM(vspheretest.Template)
	clone := func(name string) *object.VirtualMachine {
		vc.Wait(tpl.Clone(ctx, folder, name, types.VirtualMachineCloneSpec{}))
		return vc.VM(name)
	}
	worker := clone("Worker-A")
	clone("worker-off") // stays powered off
	vc.Wait(worker.PowerOn(ctx))
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-ours"}}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	k := &Kubelet{VCenter: vc.Client.Client, Folder: vspheretest.Folder + "/cluster-x", Client: env.Client}
	sync := func() Plan {
		t.Helper()
		plan, err := k.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	if plan := sync(); len(plan.AssignIPs) != 1 || plan.AssignIPs[0].VM.Name != "Worker-A" {
		t.Fatalf("first pass %+v, want a guest IP for Worker-A only", plan)
	}
	props := vc.Props(worker, "config.uuid", "guest.ipAddress")
	ip := props.Guest.IpAddress
	if !strings.HasPrefix(ip, "127.99.") {
		t.Fatalf("guest IP %q, want one in 127.99.0.0/16", ip)
	}
	if plan := sync(); len(plan.CreateNodes) != 1 {
		t.Fatalf("second pass %+v, want one Node", plan)
	}

	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "worker-a"}, node); err != nil {
		t.Fatal(err)
	}
	if want := "vsphere://" + strings.ToLower(props.Config.Uuid); node.Spec.ProviderID != want {
		t.Errorf("providerID %q, want %q", node.Spec.ProviderID, want)
	}
	if want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: "worker-a"}}; fmt.Sprint(node.Status.Addresses) != fmt.Sprint(want) {
		t.Errorf("addresses %v, want %v", node.Status.Addresses, want)
	}
	if node.Annotations[kwokNodeAnnotation] != "fake" {
		t.Errorf("annotations %v, want %s=fake (kwok keeps the Node Ready)", node.Annotations, kwokNodeAnnotation)
	}
	if plan := sync(); !plan.Empty() {
		t.Errorf("third pass %+v, want nothing to do", plan)
	}

	vc.Wait(worker.PowerOff(ctx))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		k.Run(runCtx, 100*time.Millisecond, func(err error) { t.Log(err) })
	}()
	defer func() { stop(); <-done }() // before vcsim and the API server stop
	poll.Eventually(t, 10*time.Second, "node worker-a deleted after its VM powered off", func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Name: "worker-a"}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("node still there (%v)", err)
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
		t.Errorf("the other node: %v, want it untouched", err)
	}
}
