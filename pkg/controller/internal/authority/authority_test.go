package authority

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	const (
		mapi      = machinev1beta1.MachineAuthorityMachineAPI
		capi      = machinev1beta1.MachineAuthorityClusterAPI
		migrating = machinev1beta1.MachineAuthorityMigrating
	)
	type want struct {
		step           Step
		initTo         machinev1beta1.MachineAuthority
		pausedStatus   corev1.ConditionStatus // "" = no Paused condition
		pausedReason   string
		pausedSeverity machinev1beta1.ConditionSeverity
		pausedMessage  string
	}
	cases := []struct {
		name         string
		gate         bool
		spec, status machinev1beta1.MachineAuthority
		want         want
	}{
		{name: "gate off: a Machine handed to Cluster API is reconciled", gate: false, spec: capi, status: capi, want: want{step: Reconcile}},
		{name: "gate off, nothing set", gate: false, want: want{step: Reconcile}},
		{name: "gate on, CRD without the field", gate: true, spec: "", status: "", want: want{step: Reconcile}},
		{name: "gate on, status not set yet: copied from spec", gate: true, spec: capi, status: "", want: want{step: InitStatus, initTo: capi}},
		{name: "gate on, status not set yet, MachineAPI", gate: true, spec: mapi, status: "", want: want{step: InitStatus, initTo: mapi}},
		{name: "gate on, ClusterAPI", gate: true, spec: capi, status: capi,
			want: want{step: Pause, pausedStatus: corev1.ConditionTrue, pausedReason: "AuthoritativeAPINotMachineAPI", pausedMessage: "The AuthoritativeAPI status is set to 'ClusterAPI'"}},
		{name: "gate on, migrating (the status decides, not the spec)", gate: true, spec: mapi, status: migrating,
			want: want{step: Pause, pausedStatus: corev1.ConditionTrue, pausedReason: "AuthoritativeAPINotMachineAPI", pausedMessage: "The AuthoritativeAPI status is set to 'Migrating'"}},
		{name: "gate on, MachineAPI: reconciled, not paused", gate: true, spec: mapi, status: mapi,
			want: want{step: Reconcile, pausedStatus: corev1.ConditionFalse, pausedReason: "AuthoritativeAPIMachineAPI", pausedSeverity: machinev1beta1.ConditionSeverityInfo, pausedMessage: "The AuthoritativeAPI status is set to 'MachineAPI'"}},
		{name: "gate on, handed back (spec ClusterAPI, status MachineAPI): the status decides", gate: true, spec: capi, status: mapi,
			want: want{step: Reconcile, pausedStatus: corev1.ConditionFalse, pausedReason: "AuthoritativeAPIMachineAPI", pausedSeverity: machinev1beta1.ConditionSeverityInfo, pausedMessage: "The AuthoritativeAPI status is set to 'MachineAPI'"}},
		{name: "gate on, unknown status", gate: true, spec: mapi, status: "Other", want: want{step: Ignore}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.gate, tc.spec, tc.status)
			if d.Step != tc.want.step || d.InitTo != tc.want.initTo {
				t.Errorf("step %s initTo %q, want %s %q", d.Step, d.InitTo, tc.want.step, tc.want.initTo)
			}
			if tc.want.pausedStatus == "" {
				if d.Paused != nil {
					t.Errorf("Paused = %+v, want none", *d.Paused)
				}
				return
			}
			if d.Paused == nil {
				t.Fatal("no Paused condition")
			}
			p := *d.Paused
			if p.Type != "Paused" || p.Status != tc.want.pausedStatus || p.Reason != tc.want.pausedReason ||
				p.Severity != tc.want.pausedSeverity || p.Message != tc.want.pausedMessage {
				t.Errorf("Paused = %+v, want %+v", p, tc.want)
			}
		})
	}
}

// TestApply: InitStatus writes spec's value, Pause adds Paused=True once (a
// second pass writes nothing), Ignore writes nothing. Breaks if: Apply
// dropped the "same condition already there" check (a write per reconcile).
func TestApply(t *testing.T) {
	now := time.Unix(1000, 0)
	capi := machinev1beta1.MachineAuthorityClusterAPI
	var api machinev1beta1.MachineAuthority
	var conds []machinev1beta1.Condition
	if !Apply(logr.Discard(), Decide(true, capi, ""), "MachineSet", &api, &conds, now) || api != capi || len(conds) != 0 {
		t.Fatalf("InitStatus: authoritativeAPI %q, conditions %v; want %q and none", api, conds, capi)
	}
	pause := Decide(true, capi, capi)
	if !Apply(logr.Discard(), pause, "MachineSet", &api, &conds, now) || !conditionIs(conds, corev1.ConditionTrue, ReasonNotMachineAPI) {
		t.Fatalf("Pause: conditions %v, want Paused=True/%s", conds, ReasonNotMachineAPI)
	}
	if Apply(logr.Discard(), pause, "MachineSet", &api, &conds, now.Add(time.Minute)) {
		t.Error("Pause again: something to write, want nothing (the condition is there)")
	}
	if Apply(logr.Discard(), Decide(true, capi, "Unknown"), "MachineSet", &api, &conds, now) {
		t.Error("Ignore: something to write, want nothing")
	}
}

func conditionIs(conds []machinev1beta1.Condition, status corev1.ConditionStatus, reason string) bool {
	return len(conds) == 1 && conds[0].Type == PausedCondition && conds[0].Status == status && conds[0].Reason == reason
}
