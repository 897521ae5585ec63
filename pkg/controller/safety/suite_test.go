package safety

import (
	"testing"
	"time"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain starts one API server for the package. SAFETY_TEST_LOG=1 shows
// the controllers' logs.
func TestMain(m *testing.M) { testenv.MainWith(m, &env, testenv.Options{LogEnv: "SAFETY_TEST_LOG"}) }

const waitTimeout = 30 * time.Second

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string { return testenv.CreateNamespace(t, env.Client, "safety-") }

// recorder is the shared fake: find returns the events of reason about name, all every event.
type recorder struct{ testenv.Recorder }

func (r *recorder) find(reason, name string) []string { return r.Find(reason, name) }
func (r *recorder) all() []string                     { return r.All() }

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	poll.Eventually(t, waitTimeout, what, poll.Check(f))
}
