//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
)

// TestBenchVSphere is `make bench-vsphere`: on a `make run PLATFORM=vsphere`
// cluster it scales a copy of the worker MachineSet 0 → N → 0
// (VSPHERE_BENCH_REPLICAS; skipped when unset) and logs the time to N Running
// Machines, each Machine's creationTimestamp → Running latency as a watch
// saw it, the time to none left, and the vCenter requests per Machine by
// operation, from mapi_vsphere_request_duration_seconds scraped from the
// machine controller before and after each step.
func TestBenchVSphere(t *testing.T) {
	raw := os.Getenv("VSPHERE_BENCH_REPLICAS")
	if raw == "" {
		t.Skip("VSPHERE_BENCH_REPLICAS is not set: run make bench-vsphere on a make run PLATFORM=vsphere cluster")
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		t.Fatalf("VSPHERE_BENCH_REPLICAS=%q: want a positive number", raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	vc := requireVSphere(ctx, t)
	pod := localPod(ctx, t, "controller")
	addr := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(containerPort(t, pod, "machine-mtrc"))))
	token, _ := scrapeIdentity(ctx, t)
	ms, vms := newVSphereMachineSet(ctx, t, vc, "bench-vsphere")

	running := watchRunning(ctx, t, ms)
	before := vcenterRequests(ctx, t, addr, token)
	start := time.Now()
	scaleMachineSet(ctx, t, ms, int32(n))
	waitFor(ctx, t, fmt.Sprintf("%d Running Machines matching %d powered-on VMs", n, n), func(ctx context.Context) (bool, error) {
		return vsphereSetRunning(ctx, vms, ms, n)
	})
	up := vcenterRequests(ctx, t, addr, token)
	latencies, last := running.latencies()
	if len(latencies) != n {
		t.Fatalf("the watch saw %d Machines become Running, want %d", len(latencies), n)
	}

	downStart := time.Now()
	scaleMachineSet(ctx, t, ms, 0)
	waitFor(ctx, t, "no Machine, Node or VM of the MachineSet left", func(ctx context.Context) (bool, error) {
		return vsphereSetGone(ctx, vms, ms)
	})
	down := time.Since(downStart)
	after := vcenterRequests(ctx, t, addr, token)

	var b strings.Builder
	fmt.Fprintf(&b, "vSphere (vcsim) scale 0→%d→0\n", n)
	fmt.Fprintf(&b, "  0→%d: %d Running after %.1f s (last Running seen by the watch); VMs matched at %.1f s\n",
		n, n, last.Sub(start).Seconds(), up.at.Sub(start).Seconds())
	fmt.Fprintf(&b, "  create→Running per Machine (creationTimestamp, 1 s resolution → Running seen by the watch): p50 %.1f s, p90 %.1f s, max %.1f s\n",
		percentile(latencies, 50).Seconds(), percentile(latencies, 90).Seconds(), percentile(latencies, 100).Seconds())
	fmt.Fprintf(&b, "  %d→0: no Machine, Node or VM left after %.1f s\n", n, down.Seconds())
	writeRequests(&b, "scale-up", up.diff(before), n)
	writeRequests(&b, "scale-down", after.diff(up), n)
	t.Log("\n" + b.String())
}

// runningWatch records, per Machine of a MachineSet, its creationTimestamp
// and when a watch first saw it Running.
type runningWatch struct {
	mu      sync.Mutex
	created map[string]time.Time
	running map[string]time.Time
}

func watchRunning(ctx context.Context, t *testing.T, ms *machinev1beta1.MachineSet) *runningWatch {
	t.Helper()
	w := &runningWatch{created: map[string]time.Time{}, running: map[string]time.Time{}}
	list := &machinev1beta1.MachineList{}
	sel := []client.ListOption{client.InNamespace(ms.Namespace), client.MatchingLabels{setLabel: ms.Name}}
	if err := cluster.List(ctx, list, sel...); err != nil {
		t.Fatal(err)
	}
	watchFrom(t, list, list.ResourceVersion, func(ev watch.Event) {
		m, ok := ev.Object.(*machinev1beta1.Machine)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.created[m.Name] = m.CreationTimestamp.Time
		if _, seen := w.running[m.Name]; !seen && ptr.Deref(m.Status.Phase, "") == "Running" {
			w.running[m.Name] = now
		}
	}, sel...)
	return w
}

// latencies returns each Running Machine's creationTimestamp → Running time,
// sorted, and when the last one was seen Running.
func (w *runningWatch) latencies() ([]time.Duration, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	var last time.Time
	for name, at := range w.running {
		out = append(out, at.Sub(w.created[name]))
		if at.After(last) {
			last = at
		}
	}
	slices.Sort(out)
	return out, last
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}

// requestCounts is the machine controller's vCenter request count per
// "client operation status" at one scrape.
type requestCounts struct {
	at     time.Time
	counts map[string]float64
}

// vcenterRequests scrapes the machine controller's
// mapi_vsphere_request_duration_seconds sample counts.
func vcenterRequests(ctx context.Context, t *testing.T, addr, token string) requestCounts {
	t.Helper()
	code, all, err := scrape(ctx, addr, token)
	if err != nil || code != 200 {
		t.Fatalf("scraping the machine controller (%s): status %d (%v)", addr, code, err)
	}
	rc := requestCounts{at: time.Now(), counts: map[string]float64{}}
	for _, s := range find(all, vsphere.RequestDurationMetric, nil) {
		rc.counts[s.labels["client"]+" "+s.labels["operation"]+" "+s.labels["status"]] += s.value
	}
	return rc
}

func (r requestCounts) diff(earlier requestCounts) map[string]float64 {
	out := map[string]float64{}
	for k, v := range r.counts {
		if d := v - earlier.counts[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// writeRequests writes the requests of a step per Machine, most frequent
// first.
func writeRequests(b *strings.Builder, step string, d map[string]float64, machines int) {
	keys := make([]string, 0, len(d))
	var total float64
	for k, v := range d {
		keys = append(keys, k)
		total += v
	}
	sort.Slice(keys, func(i, j int) bool { return d[keys[i]] > d[keys[j]] || d[keys[i]] == d[keys[j]] && keys[i] < keys[j] })
	fmt.Fprintf(b, "  vCenter requests during the %s: %.0f, %.1f per Machine\n", step, total, total/float64(machines))
	for _, k := range keys {
		fmt.Fprintf(b, "    %-52s %6.0f  %5.2f per Machine\n", k, d[k], d[k]/float64(machines))
	}
}
