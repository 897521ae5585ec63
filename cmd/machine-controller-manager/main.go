// Command machine-controller-manager runs the machine controller with the kubemark (docs/kubemark.md) and
// vSphere (docs/vsphere.md) providers, each Machine dispatched by its providerSpec type.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/api/features"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/kubemark"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

// flags are this binary's own flags, beyond the shared operand ones.
type flags struct {
	drainTimeout time.Duration
	safety       safety.MachineControllerOptions
}

func main() {
	opts, f, err := parse(os.Args[1:])
	operand.ExitOnParseError("machine-controller-manager", err)
	if opts.LeaderElect {
		platform, err := clusterPlatform(opts, platformReadInterval, platformReadTimeout)
		if err != nil {
			fmt.Fprintf(os.Stderr, "machine-controller-manager: %v\n", err)
			os.Exit(1)
		}
		opts.LeaderElectionID = leaseFor(platform)
	}
	opts.Run("machine-controller-manager", func(mgr manager.Manager) error { return addControllers(mgr, opts, f) })
}

// Lease names follow OpenShift's providers' (cluster-api-provider-<provider>-leader).
const (
	leaderElectionID = names.KubemarkLeaseName
	vsphereLeaseName = "cluster-api-provider-vsphere-leader"
)

// leaseFor picks the Lease by platform: on vSphere this binary replaces OpenShift's vSphere machine
// controller, so it takes that one's Lease and the two never act at once.
func leaseFor(platform configv1.PlatformType) string {
	if platform == configv1.VSpherePlatformType {
		return vsphereLeaseName
	}
	return leaderElectionID
}

func parse(args []string) (operand.Options, flags, error) {
	opts := operand.Defaults(leaderElectionID, ":8081", ":9440")
	// Provisioning is a chain of API round trips: sized by the scale benchmark (docs/performance.md).
	opts.MaxConcurrentReconciles = machine.DefaultMaxConcurrentReconciles
	f := flags{safety: safety.DefaultMachineControllerOptions()}
	err := opts.Parse("machine-controller-manager", args, func(fs *pflag.FlagSet) {
		f.safety.AddFlags(fs)
		fs.DurationVar(&f.drainTimeout, "node-drain-timeout", 0,
			"How long to try evicting a deleted Machine's pods before deleting the rest and proceeding; 0 waits forever. "+
				"The Machine annotation machine.openshift.io/node-drain-timeout overrides it.")
	}, f.safety.Validate)
	if err != nil {
		return opts, f, err
	}
	if f.drainTimeout < 0 {
		return opts, f, fmt.Errorf("--node-drain-timeout must not be negative")
	}
	return opts, f, nil
}

// addControllers registers the providers and, once the Machine CRD is served, the machine controller.
func addControllers(mgr manager.Manager, opts operand.Options, f flags) error {
	return addControllersWith(mgr, opts, f, vsphere.Options{}, opts.ControllerOptions())
}

// addControllersWith takes the vSphere provider's and the controller's options, which tests shorten.
func addControllersWith(mgr manager.Manager, opts operand.Options, f flags, vsOpts vsphere.Options, co controller.Options) error {
	// Uncached: the cache covers only --namespace; no Secret informer and the least RBAC for vSphere.
	providerClient, err := client.New(mgr.GetConfig(), client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("creating the provider client: %w", err)
	}
	if err := kubemark.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	vsOpts.Client = providerClient
	vsOpts.VMGroupZonal = opts.FeatureGate(features.FeatureGateVSphereHostVMGroupZonal)
	vs := vsphere.NewActuator(vsOpts)
	if err := vs.RegisterMetrics(ctrlmetrics.Registry); err != nil {
		return err
	}
	if err := mgr.Add(vsphereSessions{vs}); err != nil {
		return fmt.Errorf("adding the vSphere session cleanup: %w", err)
	}
	// kubemark first: it reports on a providerSpec naming no type, as when it was the only provider.
	km := kubemark.NewActuator(kubemark.Options{Client: providerClient, NodeReader: mgr.GetClient()})
	// The safety checks: docs/safety.md.
	gate := safety.NewAPIServerGate(providerClient, opts.Namespace, f.safety)
	if err := mgr.Add(gate); err != nil {
		return fmt.Errorf("adding the API-server check: %w", err)
	}
	orphans := safety.NewOrphanCollector(safety.OrphanCollectorOptions{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: opts.Namespace, Period: f.safety.OrphanPeriod,
		MaxDeletions: f.safety.OrphanMaxDeletions, DryRun: f.safety.OrphanDryRun,
		Recorder: mgr.GetEventRecorder(safety.OrphanCollectorName),
		Listers:  []provider.InstanceLister{km, vs}, Gate: gate,
	})
	r := machine.NewReconciler(machine.Options{
		MachineAPIMigration: opts.FeatureGate(features.FeatureGateMachineAPIMigration),
		Actuator:            provider.NewProviders(km, vs),
		NodeDrainTimeout:    f.drainTimeout,
		Namespace:           opts.Namespace,
		Gate:                gate,
	})
	err = crdwait.Add(mgr, crdwait.Gate{
		Name: "machine", Kinds: []schema.GroupVersionKind{machinev1beta1.GroupVersion.WithKind("Machine")}, Required: true,
		Setup: func(mgr manager.Manager) error {
			if err := r.SetupWithManager(mgr, co); err != nil {
				return err
			}
			return mgr.Add(orphans)
		},
	})
	if err != nil {
		return fmt.Errorf("setting up the machine controller: %w", err)
	}
	return nil
}

// vsphereSessions logs out of vCenter when the manager stops, so vCenter does not keep the sessions.
type vsphereSessions struct{ a *vsphere.Actuator }

// Start implements manager.Runnable.
func (v vsphereSessions) Start(ctx context.Context) error {
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v.a.Close(closeCtx)
	return nil
}

// NeedLeaderElection: the cleanup runs whether or not this replica leads.
func (v vsphereSessions) NeedLeaderElection() bool { return false }
