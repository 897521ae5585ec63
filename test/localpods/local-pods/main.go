// Command local-pods runs the pods of the operator's and the operand's
// Deployments on the local cluster as local processes (see package
// localpods). Test and development tooling: hack/local/deploy.sh starts it.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/machine-api-operator/machine-api-operator/test/localpods"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == localpods.ContainerInitCommand {
		err := localpods.ContainerInit(os.Args[2])
		fmt.Fprintf(os.Stderr, "local-pods: starting the container: %v\n", err)
		os.Exit(128)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "local-pods: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		kubeconfig, namespace, selector, imagesConfigMap string
		binDir, stateDir, logDir, podCIDR, hostIP        string
		images, hostForwards                             []string
		uid                                              int
		backoffInitial, backoffMax                       time.Duration
	)
	fs := pflag.NewFlagSet("local-pods", pflag.ExitOnError)
	fs.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the local cluster (an administrator's).")
	fs.StringVar(&namespace, "namespace", "openshift-machine-api", "Namespace of the pods to run.")
	fs.StringVar(&selector, "selector", "k8s-app in (machine-api-operator,controller)", "Label selector of the pods to run; kwok must be told to disregard the same pods.")
	fs.StringSliceVar(&images, "image", nil, "Image (repository) whose containers run; repeatable.")
	fs.StringVar(&imagesConfigMap, "images-configmap", "machine-api-operator-images", "ConfigMap whose images.json names this project's images (machineAPIOperator, clusterAPIControllerKubemark).")
	fs.StringVar(&binDir, "bin-dir", "bin", "Directory with this project's binaries.")
	fs.StringVar(&stateDir, "state-dir", ".local/pods", "Directory for the pods' volumes and network namespaces.")
	fs.StringVar(&logDir, "log-dir", ".local/logs", "Container logs go to <log-dir>/<pod>/<container>.log.")
	fs.StringVar(&podCIDR, "pod-cidr", "127.98.0.0/16", "Pod IPs (must be in 127.0.0.0/8 and not kwok's --cidr).")
	fs.StringVar(&hostIP, "host-ip", "127.0.0.1", "The pods' hostIP.")
	fs.StringSliceVar(&hostForwards, "forward-host", nil, "host:port on 127.0.0.0/8 that leads from inside every pod to the same address on the host (the local vSphere's vcsim); repeatable.")
	fs.IntVar(&uid, "default-uid", 65532, "User the containers run as unless their securityContext says otherwise (the image's USER).")
	fs.DurationVar(&backoffInitial, "backoff-initial", time.Second, "First restart back-off (doubling).")
	fs.DurationVar(&backoffMax, "backoff-max", 30*time.Second, "Longest restart back-off.")
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])

	for _, addr := range hostForwards {
		if ap, err := netip.ParseAddrPort(addr); err != nil || !ap.Addr().IsLoopback() {
			return fmt.Errorf("--forward-host %q: want an IP:port on 127.0.0.0/8", addr)
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: it creates network and mount namespaces for the pods")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", kubeconfig, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the API server %s is not on 127.0.0.0/8", cfg.Host)
	}
	cidr, err := netip.ParsePrefix(podCIDR)
	if err != nil || !cidr.Addr().IsLoopback() {
		return fmt.Errorf("--pod-cidr %q must be a prefix in 127.0.0.0/8", podCIDR)
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return localpods.New(localpods.Options{
		Client:          client,
		APIServer:       u.Host,
		Namespace:       namespace,
		Selector:        sel,
		Images:          images,
		ImagesConfigMap: imagesConfigMap,
		BinDir:          abs(binDir),
		StateDir:        abs(stateDir),
		LogDir:          abs(logDir),
		SelfExe:         self,
		HostForwards:    hostForwards,
		PodCIDR:         cidr,
		HostIP:          hostIP,
		DefaultUID:      uid,
		BackoffInitial:  backoffInitial,
		BackoffMax:      backoffMax,
	}).Run(ctx)
}
