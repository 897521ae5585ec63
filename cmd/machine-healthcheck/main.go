// Command machine-healthcheck runs the health controllers: the
// MachineHealthCheck controller (remediates unhealthy Machines, with the
// maxUnhealthy short-circuit) and the NodeMaintenance controller (cordons
// and drains a node declaratively, and undoes it when the NodeMaintenance is
// deleted).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machinehealthcheck"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodemaintenance"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

// leaderElectionID is OpenShift's lease name for the health check
// controller, so that OpenShift's image and this one never both lead.
const leaderElectionID = "cluster-api-provider-healthcheck-leader"

func main() {
	opts := operand.Defaults(leaderElectionID, ":8083", ":9442")
	opts.MaxConcurrentReconciles = 10
	var noNodeMaintenance bool
	fs := pflag.NewFlagSet("machine-healthcheck", pflag.ExitOnError)
	opts.AddFlags(fs)
	fs.BoolVar(&noNodeMaintenance, "disable-node-maintenance", false,
		"Do not run the NodeMaintenance controller (for clusters where medik8s's node-maintenance-operator handles NodeMaintenances).")
	_ = fs.Parse(os.Args[1:])
	if err := run(opts, !noNodeMaintenance); err != nil {
		fmt.Fprintf(os.Stderr, "machine-healthcheck: %v\n", err)
		os.Exit(1)
	}
}

func run(opts operand.Options, nodeMaintenance bool) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	cfg, err := opts.RESTConfig("machine-healthcheck/" + version.String())
	if err != nil {
		return err
	}
	mgr, err := opts.NewManager(cfg)
	if err != nil {
		return err
	}
	mhc := machinehealthcheck.NewReconciler(machinehealthcheck.Options{Namespace: opts.Namespace})
	if err := mhc.SetupWithManager(mgr, opts.ControllerOptions()); err != nil {
		return fmt.Errorf("setting up the machinehealthcheck controller: %w", err)
	}
	if nodeMaintenance {
		kube, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("creating the clientset for draining: %w", err)
		}
		nm := nodemaintenance.NewReconciler(nodemaintenance.Options{KubeClient: kube})
		if err := nm.SetupWithManager(mgr, opts.ControllerOptions()); err != nil {
			return fmt.Errorf("setting up the nodemaintenance controller: %w", err)
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
