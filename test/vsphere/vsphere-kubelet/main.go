// Command vsphere-kubelet is the local vSphere's stand-in for the kubelets of
// its VMs (package test/vsphere/standin): for each powered-on VM in -folder
// it sets a guest IP and registers a Node, and deletes the Node when the VM
// is powered off or destroyed. vCenter comes from GOVC_URL, GOVC_USERNAME,
// GOVC_PASSWORD and GOVC_INSECURE (.local/vsphere.env), the cluster from
// -kubeconfig.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/session/keepalive"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/test/vsphere/standin"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster the Nodes are registered in")
	folder := flag.String("folder", "", "inventory path of the cluster's VM folder, e.g. /DC0/vm/machine-api-local")
	interval := flag.Duration("interval", time.Second, "how often VMs and Nodes are compared")
	flag.Parse()
	if *folder == "" || *kubeconfig == "" {
		log.Fatal("-folder and -kubeconfig (or KUBECONFIG) are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	vc, err := connect(ctx)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("reading %s: %v", *kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		log.Fatalf("creating the API client: %v", err)
	}
	k := &standin.Kubelet{VCenter: vc.Client, Folder: *folder, Client: c}
	log.Printf("registering Nodes for the powered-on VMs of %s", *folder)
	k.Run(ctx, *interval, func(err error) { log.Print(err) })
}

// connect logs in to the vCenter that the GOVC_* variables name.
func connect(ctx context.Context) (*govmomi.Client, error) {
	raw := os.Getenv("GOVC_URL")
	if raw == "" {
		return nil, fmt.Errorf("GOVC_URL is not set: source .local/vsphere.env (written by hack/vsphere/up.sh)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("GOVC_URL %q: %w", raw, err)
	}
	u.User = url.UserPassword(os.Getenv("GOVC_USERNAME"), os.Getenv("GOVC_PASSWORD"))
	insecure := os.Getenv("GOVC_INSECURE") == "1" || os.Getenv("GOVC_INSECURE") == "true"
	c, err := govmomi.NewClient(ctx, u, insecure)
	if err != nil {
		return nil, fmt.Errorf("logging in to %s: %w", raw, err)
	}
	// Keep the session from idling out between passes.
	c.Client.RoundTripper = keepalive.NewHandlerSOAP(c.Client.RoundTripper, time.Minute, nil)
	return c, nil
}
