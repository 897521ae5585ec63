package status

import (
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0   = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	opts = Options{StableDuration: 3 * time.Minute, DegradedAfter: 2 * time.Minute}
)

type want struct {
	available, progressing, degraded configv1.ConditionStatus
	availableReason, degradedReason  string
	messageContains                  map[configv1.ClusterStatusConditionType]string
	versionsWritten                  bool
	version                          string // the version in status.versions, when written
	requeue                          time.Duration
}

func availableStatus(version string) configv1.ClusterOperatorStatus {
	return configv1.ClusterOperatorStatus{
		Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: ReasonAsExpected, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Reason: ReasonAsExpected, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, Reason: ReasonAsExpected, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		},
		Versions: []configv1.OperandVersion{{Name: "operator", Version: version}},
	}
}

func TestCompute(t *testing.T) {
	healthy := Operand{RolledOut: true, Available: true, Since: t0.Add(-time.Hour)}
	tests := []struct {
		name string
		prev configv1.ClusterOperatorStatus
		obs  Observation
		opts *Options
		want want
	}{
		{
			name: "fresh install, operand not yet available",
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0, Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "False",
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorProgressing: "Progressing towards operator: 4.22.0"},
				requeue:         2 * time.Minute},
		},
		{
			name: "operand available but not for the stable duration yet",
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{RolledOut: true, Available: true, Since: t0.Add(-time.Minute)}},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "False", requeue: 2 * time.Minute},
		},
		{
			name: "operand stable: available, versions written",
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{RolledOut: true, Available: true, Since: t0.Add(-3 * time.Minute)}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorAvailable: "Cluster Machine API Operator is available at operator: 4.22.0"}},
		},
		{
			name: "stable duration zero: available at once",
			opts: &Options{StableDuration: 0, DegradedAfter: 2 * time.Minute},
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{RolledOut: true, Available: true, Since: t0}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true},
		},
		{
			name: "noop",
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", NoOp: true},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorAvailable: "Cluster Machine API Operator is in NoOp mode"}},
		},
		{
			name: "outage after install: Available=False at once, Degraded after the grace period",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-30 * time.Second), Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonOperandUnavailable, progressing: "True", degraded: "False", versionsWritten: true, requeue: 90 * time.Second},
		},
		{
			name: "outage longer than the grace period: Degraded",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonOperandUnavailable, progressing: "True", degraded: "True", degradedReason: ReasonOperandUnavailable, versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorDegraded: "0/1 replicas available"}},
		},
		{
			name: "sync failure within the grace period: Degraded unchanged",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: healthy, Failure: &Failure{Reason: ReasonSyncFailed, Message: "applying: forbidden"}, FailingSince: t0.Add(-time.Minute)},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true, requeue: time.Minute},
		},
		{
			name: "sync failure past the grace period: Degraded with its reason, operand still available",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: healthy, Failure: &Failure{Reason: ReasonSyncFailed, Message: "applying: forbidden"}, FailingSince: t0.Add(-2 * time.Minute)},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "True", degradedReason: ReasonSyncFailed, versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorDegraded: "forbidden"}},
		},
		{
			// The deadline (failing since 12:00:00.5 + 2m) is checked against
			// the time in whole seconds: the next check is at 12:02:01, not
			// 0.5 s after 12:02:00 again and again (a hot loop).
			name: "failure deadline within a second: requeue to the next whole second",
			prev: availableStatus("4.22.0"),
			obs: Observation{Now: t0.Add(2*time.Minute + 700*time.Millisecond), ReleaseVersion: "4.22.0", Operand: healthy,
				Failure: &Failure{Reason: "MissingCRDs", Message: "CRDs not installed"}, FailingSince: t0.Add(500 * time.Millisecond)},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true, requeue: time.Second},
		},
		{
			// The outage is reported first; the failure's own grace period
			// ends a minute later and must then win without another event.
			name: "outage past the grace period, failure within it: OperandUnavailable, requeue when the failure's grace ends",
			prev: availableStatus("4.22.0"),
			obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "0/1 replicas available"},
				Failure: &Failure{Reason: "MissingCRDs", Message: "CRDs not installed"}, FailingSince: t0.Add(-time.Minute)},
			want: want{available: "False", availableReason: ReasonOperandUnavailable, progressing: "True", degraded: "True", degradedReason: ReasonOperandUnavailable, versionsWritten: true, requeue: time.Minute},
		},
		{
			name: "notes end the Available message",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: healthy, Notes: []string{"the NodeMaintenance CRD was installed by another component"}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorAvailable: "available at operator: 4.22.0; the NodeMaintenance CRD was installed by another component"}},
		},
		{
			name: "bad input: Degraded at once, Available and Progressing as they were",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: healthy, Failure: &Failure{Reason: "InvalidImagesJSON", Message: "images file /x: malformed", Immediate: true}, FailingSince: t0},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "True", degradedReason: "InvalidImagesJSON", versionsWritten: true, version: "4.22.0",
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorDegraded: "images file /x"}},
		},
		{
			name: "bad input after a restart, operand unknown: previous Available kept",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", OperandUnknown: true, Failure: &Failure{Reason: "InvalidImagesJSON", Message: "images file /x: malformed", Immediate: true}, FailingSince: t0},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "True", degradedReason: "InvalidImagesJSON", versionsWritten: true, version: "4.22.0"},
		},
		{
			name: "bad input on a fresh install: not available, says why",
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", OperandUnknown: true, Failure: &Failure{Reason: "InfrastructureNotFound", Message: "no infrastructure", Immediate: true}, FailingSince: t0},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "True", degradedReason: "InfrastructureNotFound",
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorAvailable: "no infrastructure"}},
		},
		{
			name: "no release version: versions written earlier are kept",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, Operand: healthy},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true, version: "4.22.0"},
		},
		{
			name: "outage continues across a re-created deployment: Degraded stays",
			prev: func() configv1.ClusterOperatorStatus {
				s := availableStatus("4.22.0")
				s.Conditions[0] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorAvailable, Status: "False", Reason: ReasonOperandUnavailable, LastTransitionTime: metav1.NewTime(t0.Add(-10 * time.Minute))}
				s.Conditions[2] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorDegraded, Status: "True", Reason: ReasonOperandUnavailable, LastTransitionTime: metav1.NewTime(t0.Add(-8 * time.Minute))}
				return s
			}(),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Second), Message: "Deployment does not exist yet"}},
			want: want{available: "False", availableReason: ReasonOperandUnavailable, progressing: "True", degraded: "True", degradedReason: ReasonOperandUnavailable, versionsWritten: true},
		},
		{
			name: "config change rolling out: Progressing names the change",
			prev: availableStatus("4.22.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Change: "platform AWS, proxy", Operand: Operand{Available: true, Since: t0.Add(-time.Hour), Message: "1 old replica pending termination"}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "True", degraded: "False", versionsWritten: true,
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorProgressing: "platform AWS, proxy"}},
		},
		{
			name: "upgrade: Progressing names the new version, old versions kept until rolled out",
			prev: availableStatus("4.21.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Available: true, Since: t0.Add(-time.Hour), Message: "updating"}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "True", degraded: "False", versionsWritten: true, version: "4.21.0",
				messageContains: map[configv1.ClusterStatusConditionType]string{
					configv1.OperatorProgressing: "Progressing towards operator: 4.22.0",
					configv1.OperatorAvailable:   "available at operator: 4.21.0",
				}},
		},
		{
			name: "upgrade rolled out: new versions written",
			prev: availableStatus("4.21.0"),
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Available: true, RolledOut: true, Since: t0.Add(-time.Hour)}},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "False", versionsWritten: true, version: "4.22.0",
				messageContains: map[configv1.ClusterStatusConditionType]string{configv1.OperatorAvailable: "available at operator: 4.22.0"}},
		},
		// Degraded while versions differ, as OpenShift's operator: held back until Progressing
		// has lasted UpgradeDegradedAfter (Breaks if: suppression ignores Progressing's
		// transition time, or applies when versions are equal, or to bad input).
		{
			name: "install: sync failure past the grace period, Progressing for 5m: Degraded held back until 20m",
			prev: progressingSince(nil, t0.Add(-5*time.Minute)),
			opts: &upgradeOpts,
			obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0, Message: "0/1 replicas available"},
				Failure: &Failure{Reason: ReasonSyncFailed, Message: "applying: forbidden"}, FailingSince: t0.Add(-3 * time.Minute)},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "False", requeue: 15 * time.Minute},
		},
		{
			name: "install: sync failure, Progressing for more than 20m: Degraded",
			prev: progressingSince(nil, t0.Add(-21*time.Minute)),
			opts: &upgradeOpts,
			obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0, Message: "0/1 replicas available"},
				Failure: &Failure{Reason: ReasonSyncFailed, Message: "applying: forbidden"}, FailingSince: t0.Add(-3 * time.Minute)},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "True", degradedReason: ReasonSyncFailed},
		},
		{
			name: "upgrade starts during an outage: Degraded held back for 20m from now",
			prev: availableStatus("4.21.0"),
			opts: &upgradeOpts,
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonOperandUnavailable, progressing: "True", degraded: "False", versionsWritten: true, version: "4.21.0", requeue: 20 * time.Minute},
		},
		{
			name: "upgrade: outage past the grace period, Progressing for 19m: Degraded held back",
			prev: progressingSince([]configv1.OperandVersion{{Name: "operator", Version: "4.21.0"}}, t0.Add(-19*time.Minute)),
			opts: &upgradeOpts,
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "False", versionsWritten: true, version: "4.21.0", requeue: time.Minute},
		},
		{
			name: "upgrade: Degraded for a failure now fixed, the operand still unavailable: Degraded kept",
			prev: func() configv1.ClusterOperatorStatus {
				s := progressingSince([]configv1.OperandVersion{{Name: "operator", Version: "4.21.0"}}, t0.Add(-5*time.Minute))
				s.Conditions[2] = configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorDegraded, Status: "True", Reason: ReasonSyncFailed,
					Message: "applying: forbidden", LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}
				return s
			}(),
			opts: &upgradeOpts,
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "0/1 replicas available"}},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "True", degradedReason: ReasonSyncFailed,
				versionsWritten: true, version: "4.21.0", requeue: 15 * time.Minute},
		},
		{
			name: "upgrade: bad input is Degraded at once",
			prev: progressingSince([]configv1.OperandVersion{{Name: "operator", Version: "4.21.0"}}, t0.Add(-time.Minute)),
			opts: &upgradeOpts,
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", OperandUnknown: true, Failure: &Failure{Reason: "InvalidImagesJSON", Message: "malformed", Immediate: true}, FailingSince: t0},
			want: want{available: "False", availableReason: ReasonInitializing, progressing: "True", degraded: "True", degradedReason: "InvalidImagesJSON", versionsWritten: true},
		},
		{
			name: "versions equal: the upgrade suppression does not apply",
			prev: availableStatus("4.22.0"),
			opts: &upgradeOpts,
			obs:  Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: healthy, Failure: &Failure{Reason: ReasonSyncFailed, Message: "applying: forbidden"}, FailingSince: t0.Add(-2 * time.Minute)},
			want: want{available: "True", availableReason: ReasonAsExpected, progressing: "False", degraded: "True", degradedReason: ReasonSyncFailed, versionsWritten: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts
			if tt.opts != nil {
				o = *tt.opts
			}
			got, requeue := Compute(tt.prev, tt.obs, o)
			check := func(ct configv1.ClusterStatusConditionType, status configv1.ConditionStatus, reason string) {
				t.Helper()
				c := find(got.Conditions, ct)
				if c == nil {
					t.Fatalf("no %s condition", ct)
				}
				if c.Status != status || (reason != "" && c.Reason != reason) {
					t.Errorf("%s = %s/%s (%q), want %s/%s", ct, c.Status, c.Reason, c.Message, status, reason)
				}
				if c.LastTransitionTime.IsZero() {
					t.Errorf("%s has no lastTransitionTime", ct)
				}
			}
			check(configv1.OperatorAvailable, tt.want.available, tt.want.availableReason)
			check(configv1.OperatorProgressing, tt.want.progressing, "")
			check(configv1.OperatorDegraded, tt.want.degraded, tt.want.degradedReason)
			check(configv1.OperatorUpgradeable, configv1.ConditionTrue, ReasonAsExpected)
			for ct, sub := range tt.want.messageContains {
				if c := find(got.Conditions, ct); !strings.Contains(c.Message, sub) {
					t.Errorf("%s message %q does not contain %q", ct, c.Message, sub)
				}
			}
			if written := len(got.Versions) > 0; written != tt.want.versionsWritten {
				t.Errorf("versions = %v, want written=%v", got.Versions, tt.want.versionsWritten)
			}
			if tt.want.version != "" && (len(got.Versions) == 0 || got.Versions[0].Version != tt.want.version) {
				t.Errorf("versions = %v, want %s", got.Versions, tt.want.version)
			}
			if requeue != tt.want.requeue {
				t.Errorf("requeue = %s, want %s", requeue, tt.want.requeue)
			}
		})
	}
}

// upgradeOpts add OpenShift's 20m upgrade suppression to opts.
var upgradeOpts = Options{StableDuration: opts.StableDuration, DegradedAfter: opts.DegradedAfter, UpgradeDegradedAfter: 20 * time.Minute}

// progressingSince is a status while versions are (or are not yet) those given: not
// available yet, Progressing True since since.
func progressingSince(versions []configv1.OperandVersion, since time.Time) configv1.ClusterOperatorStatus {
	return configv1.ClusterOperatorStatus{
		Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse, Reason: ReasonInitializing, LastTransitionTime: metav1.NewTime(since)},
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionTrue, Reason: ReasonSyncing, LastTransitionTime: metav1.NewTime(since),
				Message: "Progressing towards operator: 4.22.0"},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, Reason: ReasonAsExpected, LastTransitionTime: metav1.NewTime(since)},
		},
		Versions: versions,
	}
}

func TestComputeIsStableInSteadyState(t *testing.T) {
	obs := Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{RolledOut: true, Available: true, Since: t0.Add(-time.Hour)}}
	first, _ := Compute(configv1.ClusterOperatorStatus{}, obs, opts)
	obs.Now = t0.Add(10 * time.Minute)
	second, _ := Compute(first, obs, opts)
	if len(Transitions(first.Conditions, second.Conditions)) != 0 {
		t.Fatalf("steady state produced transitions")
	}
	for i := range first.Conditions {
		if first.Conditions[i] != second.Conditions[i] {
			t.Errorf("condition changed in steady state: %+v -> %+v", first.Conditions[i], second.Conditions[i])
		}
	}
}

func TestComputeKeepsForeignConditions(t *testing.T) {
	prev := availableStatus("4.22.0")
	prev.Conditions = append(prev.Conditions, configv1.ClusterOperatorStatusCondition{Type: "EvaluationConditionsDetected", Status: "False"})
	got, _ := Compute(prev, Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{RolledOut: true, Available: true, Since: t0.Add(-time.Hour)}}, opts)
	if find(got.Conditions, "EvaluationConditionsDetected") == nil {
		t.Fatal("foreign condition dropped")
	}
}

func TestTransitions(t *testing.T) {
	prev := availableStatus("4.22.0").Conditions
	next, _ := Compute(availableStatus("4.22.0"), Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "down"}}, opts)
	events := Transitions(prev, next.Conditions)
	got := map[string]string{}
	for _, e := range events {
		got[e.Reason] = e.Type
	}
	wantEvents := map[string]string{
		"AvailableFalse":  corev1.EventTypeWarning,
		"ProgressingTrue": corev1.EventTypeNormal,
		"DegradedTrue":    corev1.EventTypeWarning,
		"UpgradeableTrue": corev1.EventTypeNormal, // absent before
	}
	if len(got) != len(wantEvents) {
		t.Fatalf("events = %v, want %v", got, wantEvents)
	}
	for r, typ := range wantEvents {
		if got[r] != typ {
			t.Errorf("event %s type = %q, want %q", r, got[r], typ)
		}
	}
	// Recomputing the same state emits nothing: no event storms.
	again, _ := Compute(next, Observation{Now: t0.Add(time.Minute), ReleaseVersion: "4.22.0", Operand: Operand{Since: t0.Add(-5 * time.Minute), Message: "still down"}}, opts)
	if ev := Transitions(next.Conditions, again.Conditions); len(ev) != 0 {
		t.Fatalf("repeated state emitted events: %v", ev)
	}
}

// TestEvents: OpenShift's "Status upgrade" once per version whatever the operand's progress
// in the message, and "Status degraded" once per Degraded message, besides the transitions.
// Breaks if: the upgrade event compares whole Progressing messages (one per rollout step),
// or "Status degraded" is recorded again for an unchanged Degraded.
func TestEvents(t *testing.T) {
	progressing := func(status configv1.ConditionStatus, reason, msg string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorProgressing, Status: status, Reason: reason, Message: msg}
	}
	degraded := func(status configv1.ConditionStatus, msg string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: configv1.OperatorDegraded, Status: status, Reason: ReasonSyncFailed, Message: msg}
	}
	idle := progressing(configv1.ConditionFalse, ReasonAsExpected, "")
	towards := func(v, detail string) configv1.ClusterOperatorStatusCondition {
		return progressing(configv1.ConditionTrue, ReasonSyncing, strings.TrimSuffix("Progressing towards operator: "+v+": "+detail, ": "))
	}
	tests := []struct {
		name       string
		prev, next []configv1.ClusterOperatorStatusCondition
		want       []Event // OpenShift's only
	}{
		{"install starts", nil, []configv1.ClusterOperatorStatusCondition{towards("4.22.0", "")},
			[]Event{{corev1.EventTypeNormal, EventReasonUpgrade, "Progressing towards operator: 4.22.0"}}},
		{"upgrade starts", []configv1.ClusterOperatorStatusCondition{idle}, []configv1.ClusterOperatorStatusCondition{towards("4.22.0", "Deployment x: 0 of 1 replicas updated")},
			[]Event{{corev1.EventTypeNormal, EventReasonUpgrade, "Progressing towards operator: 4.22.0"}}},
		{"the rollout progresses: no new upgrade event",
			[]configv1.ClusterOperatorStatusCondition{towards("4.22.0", "Deployment x: 0 of 1 replicas updated")},
			[]configv1.ClusterOperatorStatusCondition{towards("4.22.0", "Deployment x: 1 old replicas pending termination")}, nil},
		{"a newer target during the upgrade",
			[]configv1.ClusterOperatorStatusCondition{towards("4.22.0", "")}, []configv1.ClusterOperatorStatusCondition{towards("4.22.1", "")},
			[]Event{{corev1.EventTypeNormal, EventReasonUpgrade, "Progressing towards operator: 4.22.1"}}},
		{"a config rollout is no upgrade", []configv1.ClusterOperatorStatusCondition{idle},
			[]configv1.ClusterOperatorStatusCondition{progressing(configv1.ConditionTrue, ReasonSyncing, "Rolling out the Machine API for proxy")}, nil},
		{"degraded", []configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionFalse, "")}, []configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionTrue, "applying: forbidden")},
			[]Event{{corev1.EventTypeWarning, EventReasonDegraded, "applying: forbidden"}}},
		{"still degraded, same message", []configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionTrue, "applying: forbidden")},
			[]configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionTrue, "applying: forbidden")}, nil},
		{"still degraded, another message", []configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionTrue, "applying: forbidden")},
			[]configv1.ClusterOperatorStatusCondition{degraded(configv1.ConditionTrue, "applying: timeout")},
			[]Event{{corev1.EventTypeWarning, EventReasonDegraded, "applying: timeout"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := Events(tt.prev, tt.next)
			transitions := Transitions(tt.prev, tt.next)
			if len(all) < len(transitions) || !slices.Equal(all[:len(transitions)], transitions) {
				t.Fatalf("Events %v do not start with the transitions %v", all, transitions)
			}
			if got := all[len(transitions):]; !slices.Equal(got, tt.want) {
				t.Errorf("OpenShift's events = %v, want %v", got, tt.want)
			}
		})
	}
}
