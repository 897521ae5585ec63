// Command machineset-controller runs the MachineSet and MachineDeployment
// controllers and serves the Machine API and NodeMaintenance admission webhooks.
package main

import (
	"fmt"
	"os"

	"github.com/openshift/api/features"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machinedeployment"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machineset"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/safety"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait"
	"github.com/machine-api-operator/machine-api-operator/pkg/webhooks"
	nmwebhook "github.com/machine-api-operator/machine-api-operator/pkg/webhooks/nodemaintenance"
)

// flags are this binary's own flags, beyond the shared operand ones.
type flags struct {
	machineset machineset.Options
	safety     safety.OvershootOptions
}

func main() {
	opts, f, err := parse(os.Args[1:])
	operand.ExitOnParseError("machineset-controller", err)
	opts.Run("machineset-controller", func(mgr manager.Manager) error { return addControllers(mgr, opts, f) })
}

// parse parses and validates the command line.
func parse(args []string) (operand.Options, flags, error) {
	// OpenShift's lease name: during an upgrade only one of the two leads.
	opts := operand.Defaults(names.MachineSetLeaseName, ":8082", ":9441")
	opts.Webhook = &operand.WebhookOptions{Enabled: true, Port: webhooks.DefaultPort, CertDir: webhooks.DefaultCertDir}
	f := flags{safety: safety.DefaultOvershootOptions()}
	ms := &f.machineset
	opts.MaxConcurrentReconciles = 10
	err := opts.Parse("machineset-controller", args, func(fs *pflag.FlagSet) {
		f.safety.AddFlags(fs)
		fs.IntVar(&ms.MaxCreateBurst, "machine-create-burst", machineset.DefaultMaxCreateBurst,
			"Most Machines one MachineSet creates in one pass; they are created in growing batches (1, 2, 4, ...), stopping at the first failing batch.")
		fs.IntVar(&ms.MaxConcurrentDeletes, "max-concurrent-deletes", machineset.DefaultMaxConcurrentDeletes,
			"Most Machine deletions one MachineSet issues at the same time when scaling down.")
		fs.DurationVar(&ms.ExpectationsTimeout, "expectations-timeout", machineset.DefaultExpectationsTimeout,
			"How long a MachineSet waits to observe its own creates and deletes in the cache before acting again anyway.")
	}, f.safety.Validate)
	if err != nil {
		return opts, f, err
	}
	if ms.MaxCreateBurst < 1 || ms.MaxConcurrentDeletes < 1 {
		return opts, f, fmt.Errorf("--machine-create-burst and --max-concurrent-deletes must be at least 1")
	}
	if ms.ExpectationsTimeout <= 0 {
		return opts, f, fmt.Errorf("--expectations-timeout must be positive")
	}
	ms.Namespace, ms.MachineAPIMigration = opts.Namespace, opts.FeatureGate(features.FeatureGateMachineAPIMigration)
	return opts, f, nil
}

// addControllers registers the controllers and the admission webhooks.
func addControllers(mgr manager.Manager, opts operand.Options, f flags) error {
	r := machineset.NewReconciler(f.machineset)
	// Without the CRDs the controllers wait for them; the webhooks serve at once.
	err := crdwait.Add(mgr, crdwait.Gate{
		Name: "machineset", Required: true,
		Kinds: []schema.GroupVersionKind{machinev1beta1.GroupVersion.WithKind("MachineSet"), machinev1beta1.GroupVersion.WithKind("Machine")},
		Setup: func(mgr manager.Manager) error {
			if err := r.SetupWithManager(mgr, opts.ControllerOptions()); err != nil {
				return err
			}
			// The overshoot freeze (docs/safety.md).
			return safety.NewOvershootController(f.safety, opts.Namespace).SetupWithManager(mgr, opts.ControllerOptions())
		},
	})
	if err != nil {
		return fmt.Errorf("setting up the machineset controller: %w", err)
	}
	md := machinedeployment.NewReconciler(machinedeployment.Options{Namespace: opts.Namespace})
	err = crdwait.Add(mgr, crdwait.Gate{
		Name:  "machinedeployment",
		Kinds: []schema.GroupVersionKind{mdv1beta1.GroupVersion.WithKind("MachineDeployment")},
		Setup: func(mgr manager.Manager) error { return md.SetupWithManager(mgr, opts.ControllerOptions()) },
	})
	if err != nil {
		return fmt.Errorf("setting up the machinedeployment controller: %w", err)
	}
	if opts.Webhook.Enabled {
		if err := webhooks.SetupWithManager(mgr, webhooks.Options{Reader: mgr.GetClient(), MachineNamespace: opts.Namespace,
			VSphereHostVMGroupZonal: opts.FeatureGate(features.FeatureGateVSphereHostVMGroupZonal)}); err != nil {
			return fmt.Errorf("setting up the admission webhooks: %w", err)
		}
		// Whether or not the CRD exists: the operator renders its configuration.
		if err := nmwebhook.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the NodeMaintenance webhook: %w", err)
		}
	}
	return nil
}
