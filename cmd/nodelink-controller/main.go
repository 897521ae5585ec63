// Command nodelink-controller links Machines and Nodes: it sets each Machine's
// status.nodeRef, annotates the Node with its Machine, and keeps the Machine's
// spec.metadata labels/annotations and spec.taints on the Node.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodelink"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

func main() {
	opts, err := parse(os.Args[1:])
	operand.ExitOnParseError("nodelink-controller", err)
	if err := run(opts); err != nil {
		fmt.Fprintf(os.Stderr, "nodelink-controller: %v\n", err)
		os.Exit(1)
	}
}

// leaderElectionID is OpenShift's lease name for nodelink, so that during an
// upgrade from OpenShift's operator the old and the new pod never both lead.
const leaderElectionID = names.NodeLinkLeaseName

// parse parses and validates the command line.
func parse(args []string) (operand.Options, error) {
	opts := operand.Defaults(leaderElectionID, ":8084", ":9444")
	// Linking is two API round trips per Node; sized by the scale benchmark.
	opts.MaxConcurrentReconciles = 50
	fs := pflag.NewFlagSet("nodelink-controller", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := operand.ParseArgs(fs, args); err != nil {
		return opts, err
	}
	return opts, opts.Validate()
}

func run(opts operand.Options) error {
	cfg, err := opts.RESTConfig("nodelink-controller/" + version.String())
	if err != nil {
		return err
	}
	mgr, err := opts.NewManager(cfg)
	if err != nil {
		return err
	}
	r := nodelink.NewReconciler(nodelink.Options{Namespace: opts.Namespace})
	if err := r.SetupWithManager(mgr, opts.ControllerOptions()); err != nil {
		return fmt.Errorf("setting up nodelink: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
