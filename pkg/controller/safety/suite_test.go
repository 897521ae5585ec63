package safety

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

// TestMain starts one API server for the package. SAFETY_TEST_LOG=1 shows
// the controllers' logs.
func TestMain(m *testing.M) { testenv.MainWith(m, &env, testenv.Options{LogEnv: "SAFETY_TEST_LOG"}) }

const waitTimeout = 30 * time.Second

var nsSeq atomic.Int32

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("safety-%d-%d", nsSeq.Add(1), time.Now().UnixNano()%100000)
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// recorder collects events as "Reason name: note".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	if o, ok := regarding.(client.Object); ok {
		name = o.GetName()
	}
	r.events = append(r.events, fmt.Sprintf("%s %s: %s", reason, name, fmt.Sprintf(note, args...)))
}

// find returns the events of reason about name.
func (r *recorder) find(reason, name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if strings.HasPrefix(e, reason+" "+name+":") {
			out = append(out, e)
		}
	}
	return out
}

// all returns every event so far.
func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	poll.Eventually(t, waitTimeout, what, poll.Check(f))
}
