// Command nodelink-controller runs nodelink (package nodelink).
package main

import (
	"fmt"
	"os"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodelink"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/crdwait"
)

func main() {
	opts, err := parse(os.Args[1:])
	operand.ExitOnParseError("nodelink-controller", err)
	opts.Run("nodelink-controller", func(mgr manager.Manager) error { return addControllers(mgr, opts) })
}

// parse parses and validates the command line.
func parse(args []string) (operand.Options, error) {
	// OpenShift's lease name: during an upgrade only one of the two leads.
	opts := operand.Defaults(names.NodeLinkLeaseName, ":8084", ":9444")
	// Linking is two API round trips per Node; sized by the scale benchmark.
	opts.MaxConcurrentReconciles = 50
	err := opts.Parse("nodelink-controller", args, nil)
	return opts, err
}

// addControllers registers nodelink once the Machine CRD is served.
func addControllers(mgr manager.Manager, opts operand.Options) error {
	err := crdwait.Add(mgr, crdwait.Gate{
		Name: "nodelink", Kinds: []schema.GroupVersionKind{machinev1beta1.GroupVersion.WithKind("Machine")}, Required: true,
		Setup: func(mgr manager.Manager) error {
			return nodelink.NewReconciler(nodelink.Options{Namespace: opts.Namespace}).SetupWithManager(mgr, opts.ControllerOptions())
		},
	})
	if err != nil {
		return fmt.Errorf("setting up nodelink: %w", err)
	}
	return nil
}
