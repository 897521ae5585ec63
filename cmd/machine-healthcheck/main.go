// Command machine-healthcheck runs the MachineHealthCheck and NodeMaintenance controllers.
package main

import (
	"cmp"
	"fmt"
	"os"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machinehealthcheck"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodemaintenance"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait"
)

// flags are this binary's own flags, beyond the shared operand ones.
type flags struct {
	mhc             machinehealthcheck.Options
	nodeMaintenance bool   // run the NodeMaintenance controller
	leaseNamespace  string // --lease-namespace, else $LEASE_NAMESPACE (medik8s's), else the default
}

func main() {
	opts, f, err := parse(os.Args[1:], os.Getenv("LEASE_NAMESPACE"))
	operand.ExitOnParseError("machine-healthcheck", err)
	opts.Run("machine-healthcheck", func(mgr manager.Manager) error {
		return addControllers(mgr, opts.ControllerOptions(), f)
	})
}

// parse parses and validates the command line; leaseNamespaceEnv is
// $LEASE_NAMESPACE.
func parse(args []string, leaseNamespaceEnv string) (operand.Options, flags, error) {
	// OpenShift's lease name: OpenShift's image and this one never both lead.
	opts := operand.Defaults(names.HealthCheckLeaseName, ":8083", ":9442")
	opts.MaxConcurrentReconciles = 10
	f := flags{
		mhc: machinehealthcheck.Options{
			RemediationInterval:    machinehealthcheck.DefaultRemediationInterval,
			NodeStartupTimeoutFrom: machinehealthcheck.StartupFromCreation,
		},
		leaseNamespace: cmp.Or(leaseNamespaceEnv, nodemaintenance.DefaultLeaseNamespace),
	}
	var noNodeMaintenance bool
	err := opts.Parse("machine-healthcheck", args, func(fs *pflag.FlagSet) {
		fs.IntVar(&f.mhc.RemediationBurst, "remediation-burst", f.mhc.RemediationBurst,
			"Rate-limit remediation beyond maxUnhealthy: how many remediations (Machine deletions, external remediation requests, external-baremetal annotations) a MachineHealthCheck may make at once, then one per --remediation-interval; 0 (the default, as OpenShift) disables the limit; 10 is a reasonable value.")
		fs.DurationVar(&f.mhc.RemediationInterval, "remediation-interval", f.mhc.RemediationInterval,
			"How often a MachineHealthCheck regains one remediation of its --remediation-burst.")
		fs.BoolVar(&f.mhc.RemediationBackoff, "remediation-backoff", f.mhc.RemediationBackoff,
			"Delay repeated remediation of one MachineSet's replacements (or one Machine) for the same cause: 1m, doubling up to 30m. Off by default, as OpenShift.")
		fs.StringVar((*string)(&f.mhc.NodeStartupTimeoutFrom), "node-startup-timeout-from", string(f.mhc.NodeStartupTimeoutFrom),
			"When nodeStartupTimeout starts: \"creation\" (the Machine's creationTimestamp, the default) or \"lastUpdated\" (its status.lastUpdated, as OpenShift; a Machine without it is not timed).")
		fs.BoolVar(&f.nodeMaintenance, "node-maintenance", true,
			"Run the NodeMaintenance controller; false where medik8s's node-maintenance-operator owns the NodeMaintenance API. "+
				"It starts once the NodeMaintenance CRD is served; the MachineHealthCheck controller does not wait for it.")
		fs.BoolVar(&noNodeMaintenance, "disable-node-maintenance", false, "Same as --node-maintenance=false.")
		_ = fs.MarkDeprecated("disable-node-maintenance", "use --node-maintenance=false")
		fs.StringVar(&f.leaseNamespace, "lease-namespace", f.leaseNamespace,
			"Namespace of the node leases the NodeMaintenance controller shares with NodeHealthCheck and Self Node Remediation (default: $LEASE_NAMESPACE, else medik8s-leases); the install creates it, and the Role to hold leases there.")
	})
	f.nodeMaintenance = f.nodeMaintenance && !noNodeMaintenance
	if err != nil {
		return opts, f, err
	}
	if f.leaseNamespace == "" {
		return opts, f, fmt.Errorf("--lease-namespace must not be empty")
	}
	f.mhc.Namespace = opts.Namespace
	return opts, f, f.mhc.Validate()
}

// addControllers registers the controllers, each once its CRDs are served
// (the NodeMaintenance CRD is not OpenShift's: the other does not wait for it).
func addControllers(mgr manager.Manager, copts controller.Options, f flags) error {
	err := crdwait.Add(mgr, crdwait.Gate{
		Name:     "machinehealthcheck",
		Kinds:    []schema.GroupVersionKind{machinev1beta1.GroupVersion.WithKind("MachineHealthCheck"), machinev1beta1.GroupVersion.WithKind("Machine")},
		Required: true,
		Setup: func(mgr manager.Manager) error {
			return machinehealthcheck.NewReconciler(f.mhc).SetupWithManager(mgr, copts)
		},
	})
	if err != nil || !f.nodeMaintenance {
		return err
	}
	return crdwait.Add(mgr, crdwait.Gate{
		Name:  "nodemaintenance",
		Kinds: []schema.GroupVersionKind{nmv1beta1.GroupVersion.WithKind(nmv1beta1.Kind)},
		Setup: func(mgr manager.Manager) error { // SetupWithManager builds the drain's clientset
			return nodemaintenance.NewReconciler(nodemaintenance.Options{LeaseNamespace: f.leaseNamespace}).SetupWithManager(mgr, copts)
		},
	})
}
