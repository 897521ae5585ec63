//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// The machine controller's API-server freeze (docs/safety.md), as the
// operator renders it: machine-controller-manager's defaults.
const (
	statusCheckPeriod  = time.Minute
	statusCheckTimeout = 30 * time.Second
	// probeLead is how long before the gate's next probe the API server is
	// stopped: the probe then fails at once, and the freeze comes
	// statusCheckTimeout (+ one retry, timeout/5) after it, ~40 s into the
	// outage. Stopped at a random moment instead, the outage would last
	// up to period + timeout + timeout/5 = 96 s before the freeze, longer
	// than the operands' 90 s renew deadline: they would lose their
	// leases and restart, which this scenario checks they never need to.
	probeLead = 5 * time.Second
	// Log lines of the freeze and the thaw (pkg/controller/safety).
	frozeLine  = "has not answered for longer than the timeout"
	thawedLine = "the API server answers again"
)

// probeRequests returns how many GETs of a Machine the API server answered
// 404: the API-server freeze's probe reads a Machine that never exists, and
// nothing else asks for a missing Machine while the cluster is at rest.
func probeRequests(ctx context.Context) (int, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return 0, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `code="404"`) ||
			!strings.Contains(line, `resource="machines"`) || !strings.Contains(line, `verb="GET"`) || strings.Contains(line, `subresource="`) && !strings.Contains(line, `subresource=""`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, err
		}
		n += int(v)
	}
	return n, sc.Err()
}

// nextProbe waits for one probe of the API-server freeze (a new 404 GET of
// a Machine) and returns when the next one is due.
func nextProbe(ctx context.Context, t *testing.T) time.Time {
	t.Helper()
	before, err := probeRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var seen time.Time
	if err := poll.Until(ctx, statusCheckPeriod+30*time.Second, func(ctx context.Context) (bool, error) {
		n, err := probeRequests(ctx)
		if n > before {
			seen = time.Now()
		}
		return n > before, err
	}); err != nil {
		t.Fatalf("waiting for a probe of the machine controller's API-server check (a 404 GET of a Machine) for %s: %v", statusCheckPeriod+30*time.Second, err)
	}
	return seen.Add(statusCheckPeriod)
}

// containerLog is one container's log file, read from an offset on.
type containerLog struct {
	path   string
	offset int64
}

// machineControllerLog returns the running machine controller's log, from
// its current end.
func machineControllerLog(ctx context.Context, t *testing.T) *containerLog {
	t.Helper()
	cs, err := containers(ctx, operandSelector, "machine-controller")
	if err != nil || len(cs) != 1 {
		t.Fatalf("want one running machine-controller: %+v (err %v)", cs, err)
	}
	l := &containerLog{path: filepath.Join(*logDir, cs[0].pod, "machine-controller.log")}
	st, err := os.Stat(l.path)
	if err != nil {
		t.Fatalf("the machine controller's log: %v", err)
	}
	l.offset = st.Size()
	return l
}

// waitLine waits (reading the file, not the API) until the log holds a
// line containing what after the offset, and moves the offset past it.
func (l *containerLog) waitLine(ctx context.Context, t *testing.T, what string, timeout time.Duration) bool {
	t.Helper()
	err := poll.Until(ctx, timeout, func(context.Context) (bool, error) {
		data, err := os.ReadFile(l.path)
		if err != nil {
			return false, err
		}
		if int64(len(data)) < l.offset {
			return false, fmt.Errorf("%s shrank", l.path)
		}
		rest := string(data[l.offset:])
		i := strings.Index(rest, what)
		if i < 0 {
			return false, nil
		}
		l.offset += int64(i + len(what))
		return true, nil
	})
	return err == nil
}
