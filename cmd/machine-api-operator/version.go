package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "MachineAPIOperator v%s\n", version.String())
			return err
		},
	}
}
