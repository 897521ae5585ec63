package main

import (
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operand/operandtest"
)

// TestCommandLine: the rendered and OpenShift's command lines start the binary (OpenShift's:
// featureGateArgs and tlsArgs), bad ones do not.
func TestCommandLine(t *testing.T) {
	args := append(operandtest.FeatureGateArgs(), operandtest.TLSArgs()...)
	operandtest.CommandLines(t, operandtest.Binary{
		Command:   "/machineset-controller",
		Parse:     func(args []string) (operand.Options, error) { o, _, err := parse(args); return o, err },
		OpenShift: append(args, operandtest.UpstreamFlags(":9441", ":8082", true)...),
		Want:      operandtest.Want{HealthAddr: ":9441", MetricsAddr: ":8082", FeatureGates: true, TLS: true},
	})
}
