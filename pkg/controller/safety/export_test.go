package safety

import (
	"k8s.io/client-go/tools/events"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// SharedEnv gives the external test package (safety_test, which may import
// the machineset controller) the package's API server.
func SharedEnv() *testenv.Env { return env }

// SetRecorder sets the overshoot controller's event recorder (before
// SetupWithManager).
func SetRecorder(c *OvershootController, r events.EventRecorder) { c.events.Recorder = r }
