package operandtest

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// Binary is what CommandLines checks of an operand binary.
type Binary struct {
	// Command is the container command, e.g. "/nodelink-controller".
	Command string
	// Parse parses a command line as the binary does.
	Parse func(args []string) (operand.Options, error)
	// Refused are command lines the binary must refuse besides an unknown flag, a positional
	// argument and an empty --namespace.
	Refused [][]string
	// OpenShift is the command line OpenShift's operator renders for the binary's container (with
	// the flags OpenShift's own binary defines under their OpenShift names); Want what it must set.
	OpenShift []string
	Want      Want
}

// CommandLines is each operand binary's command-line test:
//   - every container the operator renders (on every platform of the golden renders) or install/
//     ships with the binary has a command line it accepts, so the pod would start;
//   - bad command lines are refused, so the check above can fail;
//   - OpenShift's command line starts it with the options it asks for.
func CommandLines(t *testing.T, b Binary) {
	t.Run("rendered command lines start", func(t *testing.T) {
		for _, c := range rendertest.Containers(t, b.Command) {
			if _, err := b.Parse(c.Args); err != nil {
				t.Errorf("%s container %s: %v (args %q)", c.Source, c.Name, err, c.Args)
			}
		}
	})
	t.Run("bad command lines refused", func(t *testing.T) {
		for _, args := range append([][]string{{"--no-such-flag"}, {"positional"}, {"--namespace="}}, b.Refused...) {
			if _, err := b.Parse(args); err == nil {
				t.Errorf("parse(%q) accepted", args)
			}
		}
	})
	t.Run("OpenShift's command line", func(t *testing.T) {
		opts, err := b.Parse(b.OpenShift)
		if err != nil {
			t.Fatalf("OpenShift's command line refused: %v", err)
		}
		Check(t, opts, b.Want)
	})
}
