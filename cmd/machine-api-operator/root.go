package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// usageError marks an error caused by how the command was invoked; it exits 2.
type usageError struct{ error }

// run executes the command line and returns the process exit code:
// 0 on success, 2 for usage errors, 1 for everything else.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommandWith(stdout, stderr, runStart)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// Nothing is left to report a failed write of the error to.
	_, _ = fmt.Fprintf(stderr, "Error: %v\n", err)
	if !errors.As(err, new(usageError)) {
		return 1
	}
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		cmd = root
	}
	_, _ = fmt.Fprintln(stderr)
	_, _ = fmt.Fprint(stderr, cmd.UsageString())
	return 2
}

// newRootCommandWith is the command line, with start running the operator.
func newRootCommandWith(stdout, stderr io.Writer, start starter) *cobra.Command {
	root := &cobra.Command{
		Use:           "machine-api-operator",
		Args:          usageArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Short:         "Operator for the Machine API: machines, machine sets and health checks",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Cobra's own flag errors (unknown flag, bad value) are usage errors.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlagSet(klogFlags)

	root.AddCommand(newVersionCommand(stdout), newStartCommand(stderr, start), newRenderCommand(stdout))
	return root
}

// usageArgs rejects an unknown subcommand as a usage error (exit 2).
func usageArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
	}
	return nil
}
