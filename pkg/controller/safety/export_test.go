package safety

import "github.com/machine-api-operator/machine-api-operator/pkg/testenv"

// SharedEnv gives the external test package (safety_test, which may import
// the machineset controller) the package's API server.
func SharedEnv() *testenv.Env { return env }
