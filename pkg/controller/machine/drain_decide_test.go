package machine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestDrainStartOf(t *testing.T) {
	deleted := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		deleting   bool
		annotation string
		want       time.Time
		wantOK     bool
	}{
		{"started", true, "2026-03-01T12:00:05Z", deleted.Add(5 * time.Second), true},
		{"started in the deletion's second", true, "2026-03-01T12:00:00Z", deleted, true},
		{"no annotation", true, "", time.Time{}, false},
		{"unparsable", true, "soon", time.Time{}, false},
		{"predates the deletion (copied)", true, "2026-02-01T12:00:00Z", time.Time{}, false},
		{"not deleting", false, "2026-03-01T12:00:05Z", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &machinev1beta1.Machine{}
			if tt.deleting {
				m.DeletionTimestamp = &metav1.Time{Time: deleted.Add(300 * time.Millisecond)}
			}
			if tt.annotation != "" {
				m.Annotations = map[string]string{DrainStartedAnnotation: tt.annotation}
			}
			got, ok := drainStartOf(m)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Errorf("drainStartOf = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestNeedsEviction(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name        string
		deleting    bool
		grace       *int64
		unreachable bool
		want        bool
	}{
		{"running pod", false, nil, false, true},
		{"running pod, unreachable node", false, nil, true, true},
		{"terminating", true, ptr.To[int64](30), false, false},
		{"terminating, unreachable node: shorten its grace period", true, ptr.To[int64](30), true, true},
		{"terminating with 1s already, unreachable node", true, ptr.To[int64](1), true, false},
		{"terminating with no grace period recorded, unreachable node", true, nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{}
			if tt.deleting {
				p.DeletionTimestamp = &now
				p.DeletionGracePeriodSeconds = tt.grace
			}
			if got := needsEviction(p, tt.unreachable); got != tt.want {
				t.Errorf("needsEviction = %v, want %v", got, tt.want)
			}
		})
	}
}

// tooManyRequests is the API server's answer to an eviction a PDB refuses.
func tooManyRequests(causes ...metav1.StatusCause) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = causes
	return err
}

func TestClassifyEviction(t *testing.T) {
	pdbCause := metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 1 healthy pods and has 1 currently"}
	nsTerminating := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("namespace is terminating"))
	nsTerminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name        string
		err         error
		terminating bool
		want        evictionOutcome
		wantDetail  string
	}{
		{"accepted", nil, false, podTerminating, ""},
		{"gone", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p"), false, podGone, ""},
		{"PDB: the server's explanation", tooManyRequests(metav1.StatusCause{Type: "Other", Message: "x"}, pdbCause), false, podBlocked, pdbCause.Message},
		{"429 without a cause", tooManyRequests(), false, podBlocked, "Cannot evict pod as it would violate the pod's disruption budget."},
		{"namespace terminating, pod terminating", nsTerminating, true, podTerminating, ""},
		{"namespace terminating, pod not terminating", nsTerminating, false, podEvictionFailed, nsTerminating.Error()},
		{"other error", errors.New("boom"), false, podEvictionFailed, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, detail := classifyEviction(tt.err, tt.terminating)
			if got != tt.want || detail != tt.wantDetail {
				t.Errorf("classifyEviction = %v, %q; want %v, %q", got, detail, tt.want, tt.wantDetail)
			}
		})
	}
}

func pdb(ns, name string, sel map[string]string, allowed int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestDescribeEvictionPass(t *testing.T) {
	web := map[string]string{"app": "web"}
	ev := func(ns, name string, lbls map[string]string, o evictionOutcome, detail string) podEviction {
		return podEviction{Namespace: ns, Name: name, Labels: lbls, Outcome: o, Detail: detail}
	}
	var many []podEviction
	for i := range 7 {
		many = append(many, ev("ns", fmt.Sprintf("p%d", i), nil, podTerminating, ""))
	}
	tests := []struct {
		name    string
		results []podEviction
		pdbs    []policyv1.PodDisruptionBudget
		want    string
	}{
		{
			"blocked by a PDB",
			[]podEviction{ev("default", "web-1", web, podBlocked, "The disruption budget web needs 1 healthy pods and has 1 currently")},
			[]policyv1.PodDisruptionBudget{pdb("default", "web", web, 0)},
			"1 pod(s) remaining (1 blocked by a PodDisruptionBudget): evicting default/web-1: blocked by PodDisruptionBudget default/web (0 disruptions allowed)",
		},
		{
			"PDBs of other namespaces and selectors ignored, an empty selector selects all",
			[]podEviction{ev("default", "web-1", web, podBlocked, "")},
			[]policyv1.PodDisruptionBudget{pdb("default", "web", web, 0), pdb("default", "all", map[string]string{}, 0), pdb("other", "web", web, 0), pdb("default", "db", map[string]string{"app": "db"}, 0)},
			"1 pod(s) remaining (1 blocked by a PodDisruptionBudget): evicting default/web-1: blocked by PodDisruptionBudget default/all (0 disruptions allowed), PodDisruptionBudget default/web (0 disruptions allowed)",
		},
		{
			"no PDB found (deleted meanwhile): the server's explanation",
			[]podEviction{ev("default", "web-1", web, podBlocked, "The disruption budget web needs 1 healthy pods and has 1 currently")},
			nil,
			"1 pod(s) remaining (1 blocked by a PodDisruptionBudget): evicting default/web-1: blocked: The disruption budget web needs 1 healthy pods and has 1 currently",
		},
		{
			"mixed: blocked first, then failed, then terminating; gone pods not counted",
			[]podEviction{
				ev("default", "a", nil, podTerminating, ""),
				ev("default", "gone", nil, podGone, ""),
				ev("default", "web-1", web, podBlocked, ""),
				ev("default", "b", nil, podEvictionFailed, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."),
			},
			[]policyv1.PodDisruptionBudget{pdb("default", "web", web, 0)},
			"3 pod(s) remaining (1 blocked by a PodDisruptionBudget, 1 eviction failed, 1 terminating): " +
				"evicting default/web-1: blocked by PodDisruptionBudget default/web (0 disruptions allowed); " +
				"evicting default/b: failed: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.; " +
				"default/a: terminating",
		},
		{
			"long lists are cut",
			many, nil,
			"7 pod(s) remaining (7 terminating): ns/p0: terminating; ns/p1: terminating; ns/p2: terminating; ns/p3: terminating; ns/p4: terminating; and 2 more pod(s)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeEvictionPass(tt.results, tt.pdbs); got != tt.want {
				t.Errorf("got\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

func TestPassOutcome(t *testing.T) {
	tests := []struct {
		name          string
		results       []podEviction
		wantRemaining int
		wantEvicted   bool
		wantWarn      bool
	}{
		{"nothing", nil, 0, false, false},
		{"evicted and gone", []podEviction{{Outcome: podGone, Evicted: true}}, 0, true, false},
		{"evicted, terminating", []podEviction{{Outcome: podTerminating, Evicted: true}}, 1, true, false},
		{"already terminating", []podEviction{{Outcome: podTerminating}}, 1, false, false},
		{"blocked", []podEviction{{Outcome: podBlocked}, {Outcome: podGone}}, 1, false, true},
		{"failed", []podEviction{{Outcome: podEvictionFailed}}, 1, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remaining, evicted, warn := passOutcome(tt.results)
			if remaining != tt.wantRemaining || evicted != tt.wantEvicted || warn != tt.wantWarn {
				t.Errorf("passOutcome = %d, %v, %v; want %d, %v, %v", remaining, evicted, warn, tt.wantRemaining, tt.wantEvicted, tt.wantWarn)
			}
		})
	}
}

func TestMarkGone(t *testing.T) {
	results := []podEviction{{Namespace: "a", Name: "x", Outcome: podTerminating}, {Namespace: "a", Name: "y", Outcome: podBlocked}}
	markGone(results, []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "y"}}})
	if results[0].Outcome != podGone || results[1].Outcome != podBlocked {
		t.Errorf("markGone: %+v", results)
	}
}

func TestPassCondition(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	blocked := podEviction{Namespace: "ns", Name: "web-1", Outcome: podBlocked, Detail: "The disruption budget web needs 1 healthy pods and has 1 currently"}
	tests := []struct {
		name         string
		results      []podEviction
		timeout      time.Duration
		wantStatus   corev1.ConditionStatus
		wantReason   string
		wantSeverity machinev1beta1.ConditionSeverity
		wantMessage  string
		wantDone     bool
		wantProgress bool
	}{
		{"empty node", nil, 0, corev1.ConditionTrue, ReasonDrained, "", "node n drained", true, false},
		{"evicted and gone at once", []podEviction{{Namespace: "ns", Name: "a", Outcome: podGone, Evicted: true}}, 0,
			corev1.ConditionTrue, ReasonDrained, "", "node n drained", true, true},
		{"evicted, terminating", []podEviction{{Namespace: "ns", Name: "a", Outcome: podTerminating, Evicted: true}}, 0,
			corev1.ConditionFalse, ReasonDrainInProgress, machinev1beta1.ConditionSeverityInfo,
			"draining node n: 1 pod(s) remaining (1 terminating): ns/a: terminating", false, true},
		{"blocked, with a deadline", []podEviction{blocked}, 90 * time.Second,
			corev1.ConditionFalse, ReasonDrainInProgress, machinev1beta1.ConditionSeverityWarning,
			"draining node n: 1 pod(s) remaining (1 blocked by a PodDisruptionBudget): evicting ns/web-1: blocked: " + blocked.Detail +
				"; remaining pods will be deleted without eviction at 2026-03-01T12:01:30Z (drain timeout 1m30s)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, done, progress := passCondition("n", tt.results, nil, tt.timeout, started)
			if c.Type != DrainedCondition || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.Severity != tt.wantSeverity || c.Message != tt.wantMessage {
				t.Errorf("condition %+v\nwant %s/%s/%q %q", c, tt.wantStatus, tt.wantReason, tt.wantSeverity, tt.wantMessage)
			}
			if done != tt.wantDone || progress != tt.wantProgress {
				t.Errorf("done, progress = %v, %v; want %v, %v", done, progress, tt.wantDone, tt.wantProgress)
			}
		})
	}
}
