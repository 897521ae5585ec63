package status

import (
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func machineSet(name string, replicas int32) machinev1beta1.MachineSet {
	ms := machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	ms.Spec.Replicas = ptr.To(replicas)
	ms.Spec.Selector.MatchLabels = map[string]string{"machine.openshift.io/cluster-api-machineset": name}
	return ms
}

func machineOf(set, name, phase string) machinev1beta1.Machine {
	m := machinev1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Labels: map[string]string{"machine.openshift.io/cluster-api-machineset": set}}}
	if phase != "" {
		m.Status.Phase = ptr.To(phase)
	}
	return m
}

func TestCheckMinimumWorkers(t *testing.T) {
	const running, provisioned = machinev1beta1.PhaseRunning, "Provisioned"
	tests := []struct {
		name     string
		sets     []machinev1beta1.MachineSet
		machines []machinev1beta1.Machine
		want     string // "" = met; else a substring of the message
	}{
		{name: "no MachineSets (user-provisioned workers, single node)", want: ""},
		{name: "MachineSet of 3 without Machines", sets: []machinev1beta1.MachineSet{machineSet("w", 3)},
			want: `could not determine running Machines in MachineSet "w": replicas not satisfied for MachineSet: expected 3 replicas, got 0 current replicas`},
		{name: "MachineSet of 1 with 1 Running", sets: []machinev1beta1.MachineSet{machineSet("w", 1)},
			machines: []machinev1beta1.Machine{machineOf("w", "w-0", running)}},
		{name: "MachineSet of 1 Provisioned: one worker expected, not gated", sets: []machinev1beta1.MachineSet{machineSet("w", 1)},
			machines: []machinev1beta1.Machine{machineOf("w", "w-0", provisioned)}},
		{name: "MachineSet of 3 with 1 Machine", sets: []machinev1beta1.MachineSet{machineSet("w", 3)},
			machines: []machinev1beta1.Machine{machineOf("w", "w-0", running)}, want: "expected 3 replicas, got 1 current replicas"},
		{name: "1 Running and 2 Provisioned, plus a Machine of no MachineSet", sets: []machinev1beta1.MachineSet{machineSet("w", 3)},
			machines: []machinev1beta1.Machine{machineOf("w", "running-0", running), machineOf("w", "provisioned-0", provisioned),
				machineOf("w", "provisioned-1", ""), machineOf("infra", "infra-0", provisioned)},
			want: "minimum worker replica count (2) not yet met: current running replicas 1, waiting for [provisioned-0 provisioned-1]"},
		{name: "the waiting list does not depend on the listing order", sets: []machinev1beta1.MachineSet{machineSet("w", 3), machineSet("v", 1)},
			machines: []machinev1beta1.Machine{machineOf("w", "w-2", ""), machineOf("v", "v-0", ""), machineOf("w", "w-0", provisioned), machineOf("w", "w-1", running)},
			want:     "current running replicas 1, waiting for [v-0 w-0 w-2]"},
		{name: "2 of 3 Running", sets: []machinev1beta1.MachineSet{machineSet("w", 3)},
			machines: []machinev1beta1.Machine{machineOf("w", "w-0", running), machineOf("w", "w-1", running), machineOf("w", "w-2", provisioned)}},
		{name: "two MachineSets with one Running each", sets: []machinev1beta1.MachineSet{machineSet("a", 3), machineSet("b", 3)},
			machines: []machinev1beta1.Machine{machineOf("a", "a-0", running), machineOf("a", "a-1", ""), machineOf("a", "a-2", ""),
				machineOf("b", "b-0", running), machineOf("b", "b-1", ""), machineOf("b", "b-2", "")}},
		{name: "an empty MachineSet next to a healthy one", sets: []machinev1beta1.MachineSet{machineSet("a", 3), machineSet("b", 2)},
			machines: []machinev1beta1.Machine{machineOf("b", "b-0", running), machineOf("b", "b-1", running)},
			want:     `MachineSet "a": replicas not satisfied`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckMinimumWorkers(tt.sets, tt.machines)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInstallGate(t *testing.T) {
	stableOperand := Operand{RolledOut: true, Available: true, Since: t0.Add(-time.Hour)}
	const waiting = "minimum worker replica count (2) not yet met: current running replicas 0, waiting for [w-0 w-1]"
	initializing := configv1.ClusterOperatorStatus{Conditions: []configv1.ClusterOperatorStatusCondition{
		{Type: configv1.OperatorAvailable, Status: configv1.ConditionFalse, Reason: ReasonInitializing, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
	}}
	restartedWithoutRelease := availableStatus("")
	restartedWithoutRelease.Versions = nil
	tests := []struct {
		name      string
		prev      configv1.ClusterOperatorStatus
		obs       Observation
		applies   bool
		available configv1.ConditionStatus
		requeue   time.Duration
	}{
		{name: "fresh install, workers not Running: gated", obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: stableOperand, WaitingForWorkers: waiting},
			applies: true, available: configv1.ConditionFalse, requeue: workerGateRequeue},
		{name: "fresh install, still initializing: gated", prev: initializing, obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: stableOperand, WaitingForWorkers: waiting},
			applies: true, available: configv1.ConditionFalse, requeue: workerGateRequeue},
		{name: "fresh install, workers Running", obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: stableOperand},
			applies: true, available: configv1.ConditionTrue},
		{name: "upgrade (a version was reported): not gated", prev: availableStatus("4.21.0"),
			obs: Observation{Now: t0, ReleaseVersion: "4.22.0", Operand: stableOperand, WaitingForWorkers: waiting}, available: configv1.ConditionTrue},
		{name: "was available without a release version: not gated", prev: restartedWithoutRelease,
			obs: Observation{Now: t0, Operand: stableOperand, WaitingForWorkers: waiting}, available: configv1.ConditionTrue},
		{name: "NoOp: no provider, not gated", obs: Observation{Now: t0, ReleaseVersion: "4.22.0", NoOp: true, WaitingForWorkers: waiting},
			available: configv1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InstallGateApplies(tt.prev, tt.obs); got != tt.applies {
				t.Errorf("InstallGateApplies = %v, want %v", got, tt.applies)
			}
			next, requeue := Compute(tt.prev, tt.obs, opts)
			a := find(next.Conditions, configv1.OperatorAvailable)
			if a.Status != tt.available {
				t.Errorf("Available = %s (%s: %s), want %s", a.Status, a.Reason, a.Message, tt.available)
			}
			if tt.applies && tt.obs.WaitingForWorkers != "" {
				if a.Reason != ReasonInitializing || !strings.Contains(a.Message, waiting) {
					t.Errorf("Available %s: %s, want Initializing naming the Machines", a.Reason, a.Message)
				}
				if p := find(next.Conditions, configv1.OperatorProgressing); p.Status != configv1.ConditionTrue || !strings.Contains(p.Message, "worker Machines") {
					t.Errorf("Progressing %s: %s", p.Status, p.Message)
				}
				if d := find(next.Conditions, configv1.OperatorDegraded); d.Status != configv1.ConditionFalse {
					t.Errorf("Degraded %s: waiting for Machines to provision is not a failure", d.Status)
				}
				if len(next.Versions) != 0 {
					t.Errorf("versions written while gated: %v", next.Versions)
				}
			}
			if requeue != tt.requeue {
				t.Errorf("requeue %s, want %s", requeue, tt.requeue)
			}
		})
	}
}
