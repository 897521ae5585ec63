package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// withClock gives the controller a fake clock (starting now, so that the
// API server's timestamps and the controller's agree).
func withClock(clk *clocktesting.FakePassiveClock) func(*Options) {
	return func(o *Options) { o.Clock = clk }
}

func withBackoff(o *Options) { o.RemediationBackoff = true }

func withRateLimit(burst int, interval time.Duration) func(*Options) {
	return func(o *Options) { o.RemediationBurst, o.RemediationInterval = burst, interval }
}

// existing lists which of names exist.
func (h *harness) existing(names ...string) []string {
	h.t.Helper()
	var out []string
	for _, n := range names {
		if h.exists(n) {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) waitExisting(want []string, names ...string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("exactly %v left", want), func() error {
		if got := h.existing(names...); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("left: %v", got)
		}
		return nil
	})
	h.whenSettled(fmt.Sprintf("still exactly %v left", want), func() error {
		if got := h.existing(names...); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("left: %v", got)
		}
		return nil
	})
}

// TestRateLimit: with burst 2 and one per minute, 5 unhealthy Machines (of
// one MachineSet, present when remediation starts: no backoff between them)
// lose exactly the 2 oldest while the (fake) clock stands still, with one
// RemediationRateLimited event and no API request at rest; the others go as
// the clock advances. The status is the maxUnhealthy verdict only:
// RemediationAllowed stays True.
func TestRateLimitEnvtest(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	h := newHarness(t, withClock(clk), withRateLimit(2, time.Minute))
	names := []string{"m1", "m2", "m3", "m4", "m5"}
	for _, n := range names {
		h.newMachine(n, machineOpts{mhc: "rl", owner: "ms", failed: true})
	}
	// Paused until the controller sees all five, so that the first
	// remediation pass has all of them.
	h.newMHC("rl", func(m *machinev1beta1.MachineHealthCheck) { m.Annotations = map[string]string{PausedAnnotation: ""} })
	h.waitStatus("rl", 5, 0, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionFalse, ReasonPaused))
	h.patchMHC("rl", func(m *machinev1beta1.MachineHealthCheck) { delete(m.Annotations, PausedAnnotation) })

	h.waitExisting([]string{"m3", "m4", "m5"}, names...)
	h.waitStatus("rl", 3, 0, 0, hasCondition(machinev1beta1.RemediationAllowedCondition, corev1.ConditionTrue, ReasonRemediationAllowed))
	if ev := h.rec.find(EventRemediationRateLimited, "rl"); len(ev) != 1 || !strings.Contains(ev[0], "at most 2") {
		t.Errorf("RemediationRateLimited events %v, want 1 naming the burst", ev)
	}
	if v, _ := metricValue(RemediationRateLimitedTotal, "rl", h.ns); v != 3 {
		t.Errorf("remediation_rate_limited_total = %v, want 3 (each waiting Machine once)", v)
	}
	if v, _ := metricValue(RemediationSuccessTotal, "rl", h.ns); v != 2 {
		t.Errorf("remediation_success_total = %v, want 2", v)
	}
	// At rest until the next token (a real minute away): no API request.
	h.requests.reset()
	h.whenSettled("no requests while rate limited", func() error {
		if n := h.requests.n.Load(); n != 0 {
			return fmt.Errorf("%d API requests: %v", n, h.requests.recent())
		}
		return nil
	})

	// 30s: no token yet.
	clk.SetTime(clk.Now().Add(30 * time.Second))
	h.poke("rl")
	h.waitExisting([]string{"m3", "m4", "m5"}, names...)
	// 1m: one token.
	clk.SetTime(clk.Now().Add(30 * time.Second))
	h.poke("rl")
	h.waitExisting([]string{"m4", "m5"}, names...)
	// 3m: two more.
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	h.poke("rl")
	h.waitExisting(nil, names...)

	if n := len(h.rec.find(EventRemediationRateLimited, "rl")); n != 1 {
		t.Errorf("%d RemediationRateLimited events, want 1 (one episode)", n)
	}
	if v, _ := metricValue(RemediationRateLimitedTotal, "rl", h.ns); v != 3 {
		t.Errorf("remediation_rate_limited_total = %v, want 3", v)
	}
	if v, _ := metricValue(RemediationSuccessTotal, "rl", h.ns); v != 5 {
		t.Errorf("remediation_success_total = %v, want 5", v)
	}
	if n := len(h.rec.find(EventRemediationBackoff, "")); n != 0 {
		t.Errorf("backoff between Machines the MachineSet had at once: %v", h.rec.find(EventRemediationBackoff, ""))
	}
}

// TestBackoffEnvtest: the replacements a MachineSet makes for remediated
// Machines wait 1m, then 2m (fake clock), each with a RemediationBackoff
// event naming the wait; another MachineSet's Machine is not delayed.
func TestBackoffEnvtest(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	h := newHarness(t, withClock(clk), withBackoff)
	h.newMachine("m1", machineOpts{mhc: "bo", owner: "ms", failed: true})
	h.newMHC("bo")
	h.waitGone("m1")

	// The MachineSet's replacement fails too: it waits a minute.
	h.newMachine("r1", machineOpts{mhc: "bo", owner: "ms", failed: true})
	h.eventually("RemediationBackoff event for r1", func() error {
		ev := h.rec.find(EventRemediationBackoff, "r1")
		if len(ev) != 1 || !strings.Contains(ev[0], "waits 1m0s") || !strings.Contains(ev[0], "MachineSet ms") {
			return fmt.Errorf("events %v", ev)
		}
		return nil
	})
	// Another MachineSet's Machine is remediated at once meanwhile.
	h.newMachine("o1", machineOpts{mhc: "bo", owner: "other", failed: true})
	h.waitGone("o1")
	h.whenSettled("r1 waits", func() error {
		if !h.exists("r1") {
			return fmt.Errorf("r1 deleted before its backoff ended")
		}
		return nil
	})
	clk.SetTime(clk.Now().Add(time.Minute))
	h.poke("bo")
	h.waitGone("r1")

	// The next replacement waits two minutes.
	h.newMachine("r2", machineOpts{mhc: "bo", owner: "ms", failed: true})
	h.eventually("RemediationBackoff event for r2", func() error {
		if ev := h.rec.find(EventRemediationBackoff, "r2"); len(ev) != 1 || !strings.Contains(ev[0], "waits 2m0s") {
			return fmt.Errorf("events %v", ev)
		}
		return nil
	})
	clk.SetTime(clk.Now().Add(time.Minute))
	h.poke("bo")
	h.whenSettled("r2 waits", func() error {
		if !h.exists("r2") {
			return fmt.Errorf("r2 deleted after 1m of its 2m backoff")
		}
		return nil
	})
	clk.SetTime(clk.Now().Add(time.Minute))
	h.poke("bo")
	h.waitGone("r2")

	if v, _ := metricValue(RemediationBackoffTotal, "bo", h.ns); v != 2 {
		t.Errorf("remediation_backoff_total = %v, want 2", v)
	}
	if n := len(h.rec.find(EventRemediationBackoff, "")); n != 2 {
		t.Errorf("%d RemediationBackoff events, want 2: %v", n, h.rec.find(EventRemediationBackoff, ""))
	}
}

// TestExternalRemediationBackoff: a Machine that is unhealthy again after
// its remediation request was removed gets its next request only after the
// backoff (fake clock).
func TestExternalRemediationBackoff(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	h := newHarness(t, withClock(clk), withBackoff)
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": remGroup + "/" + remVersion, "kind": "TestRemediationTemplate",
		"metadata": map[string]any{"namespace": h.ns, "name": "reboot"},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"strategy": "Reboot"}}},
	}}
	if err := h.c.Create(h.ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	node := h.createNode("n", corev1.ConditionFalse, time.Now().Add(-time.Hour))
	h.newMachine("ext", machineOpts{mhc: "ext", owned: true, node: node})
	h.newMHC("ext", func(mhc *machinev1beta1.MachineHealthCheck) {
		mhc.Spec.RemediationTemplate = &corev1.ObjectReference{APIVersion: remGroup + "/" + remVersion, Kind: "TestRemediationTemplate", Name: "reboot"}
	})
	requestExists := func() (bool, error) {
		req := &unstructured.Unstructured{}
		req.SetAPIVersion(remGroup + "/" + remVersion)
		req.SetKind("TestRemediation")
		err := h.c.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "ext"}, req)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && req.GetDeletionTimestamp() == nil, err
	}
	wantRequest := func(what string, want bool) func() error {
		return func() error {
			ok, err := requestExists()
			if err != nil {
				return err
			}
			if ok != want {
				return fmt.Errorf("%s: request exists = %v", what, ok)
			}
			return nil
		}
	}
	h.eventually("first request", wantRequest("first", true))

	// Healthy: the request goes. Unhealthy again: the next request waits.
	h.setNodeReady(node, corev1.ConditionTrue, time.Now())
	h.eventually("request deleted", wantRequest("healthy", false))
	h.setNodeReady(node, corev1.ConditionFalse, time.Now().Add(-time.Hour))
	h.eventually("RemediationBackoff event", func() error {
		if ev := h.rec.find(EventRemediationBackoff, "ext"); len(ev) != 1 || !strings.Contains(ev[0], "waits 1m0s") || !strings.Contains(ev[0], "Machine ext") {
			return fmt.Errorf("events %v", ev)
		}
		return nil
	})
	h.whenSettled("no request during the backoff", wantRequest("backoff", false))
	clk.SetTime(clk.Now().Add(time.Minute))
	h.poke("ext")
	h.eventually("second request", wantRequest("after the backoff", true))
}
