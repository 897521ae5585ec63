package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
)

// TestCommandLine: the rendered and OpenShift's command lines start the binary (OpenShift's:
// the common args), bad ones do not.
func TestCommandLine(t *testing.T) {
	operandtest.CommandLines(t, operandtest.Binary{
		Command:   "/nodelink-controller",
		Parse:     parse,
		OpenShift: append(operandtest.CommonArgs(), operandtest.UpstreamFlags(":9444", ":8084", false)...),
		Want:      operandtest.Want{HealthAddr: ":9444", MetricsAddr: ":8084"},
	})
}
