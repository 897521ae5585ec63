package webhooks

import (
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var validKubemark = kubemarkSpec(`"cpu":"2","memory":"4Gi","pods":"110"`)

func TestValidateMachine(t *testing.T) {
	tests := []struct {
		name    string
		m       *machinev1beta1.Machine
		cluster ClusterInfo
		want    []string
	}{
		{name: "valid kubemark", m: machine("m", value(validKubemark)), cluster: kubemarkCluster},
		{name: "kubemark with only apiVersion and kind (run-time defaults)", m: machine("m", value(kubemarkSpec(""))), cluster: unknownCluster},
		{
			name: "negative cpu", m: machine("m", value(kubemarkSpec(`"cpu":"-1"`))), cluster: unknownCluster,
			want: []string{`spec.providerSpec.value.cpu: Invalid value: "-1": must be positive`},
		},
		{
			name: "unknown field", m: machine("m", value(kubemarkSpec(`"cpus":2`))), cluster: unknownCluster,
			want: []string{`spec.providerSpec.value.cpus: Forbidden: unknown field`},
		},
		{
			name: "bad duration and health mode", m: machine("m", value(kubemarkSpec(`"bootDelay":"soon","health":{"mode":"Sometimes"}`))), cluster: unknownCluster,
			want: []string{`spec.providerSpec.value.bootDelay: Invalid value: "soon"`},
		},
		{
			name: "wrong kubemark version", m: machine("m", value(`{"apiVersion":"kubemark.machine-api-operator.io/v2","kind":"`+kubemarkKind+`"}`)), cluster: unknownCluster,
			want: []string{`spec.providerSpec.value.apiVersion: Invalid value: "kubemark.machine-api-operator.io/v2": must be ` + kubemarkAPIVersion},
		},
		{
			name: "kubemark cluster, no apiVersion and kind (webhook defaulting skipped)", m: machine("m", value(`{"cpu":"1"}`)), cluster: kubemarkCluster,
			want: []string{"spec.providerSpec.value.apiVersion: Required value", "spec.providerSpec.value.kind: Required value"},
		},
		{
			name: "kubemark cluster, no providerSpec", m: machine("m", value("")), cluster: kubemarkCluster,
			want: []string{"spec.providerSpec.value: Required value"},
		},
		{
			name: "kubemark cluster, value not an object", m: machine("m", value(`[1]`)), cluster: kubemarkCluster,
			want: []string{"spec.providerSpec.value: Invalid value"},
		},
		{name: "unknown platform, no providerSpec", m: machine("m", value("")), cluster: unknownCluster},
		{name: "unknown platform, no apiVersion", m: machine("m", value(`{"cpu":"-1"}`)), cluster: unknownCluster},
		{
			name: "another provider's group is not validated here", cluster: kubemarkCluster,
			m: machine("m", value(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","cpu":"-1"}`)),
		},
		{
			name: "duplicate preDrain hook", cluster: kubemarkCluster,
			m: machine("m", value(validKubemark), func(m *machinev1beta1.Machine) {
				m.Spec.LifecycleHooks.PreDrain = hooks("a", "b", "a")
			}),
			want: []string{`spec.lifecycleHooks.preDrain[2].name: Duplicate value: "a"`},
		},
		{
			name: "duplicate preTerminate hook", cluster: kubemarkCluster,
			m: machine("m", value(validKubemark), func(m *machinev1beta1.Machine) {
				m.Spec.LifecycleHooks.PreTerminate = hooks("x", "x")
			}),
			want: []string{`spec.lifecycleHooks.preTerminate[1].name: Duplicate value: "x"`},
		},
		{
			name: "same name in preDrain and preTerminate is fine", cluster: kubemarkCluster,
			m: machine("m", value(validKubemark), func(m *machinev1beta1.Machine) {
				m.Spec.LifecycleHooks.PreDrain = hooks("a")
				m.Spec.LifecycleHooks.PreTerminate = hooks("a")
			}),
		},
		{
			name: "all errors are reported together", cluster: kubemarkCluster,
			m: machine("m", value(kubemarkSpec(`"memory":"0"`)), func(m *machinev1beta1.Machine) {
				m.Spec.LifecycleHooks.PreDrain = hooks("a", "a")
			}),
			want: []string{`spec.providerSpec.value.memory: Invalid value: "0": must be positive`, `spec.lifecycleHooks.preDrain[1].name: Duplicate value: "a"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMachine(tc.m, tc.cluster, nil)
			checkErrors(t, errs, tc.want...)
		})
	}
}

func TestValidateMachineUpdate(t *testing.T) {
	withID := func(id *string) func(*machinev1beta1.Machine) {
		return func(m *machinev1beta1.Machine) { m.Spec.ProviderID = id }
	}
	withLabel := func(m *machinev1beta1.Machine) { m.Labels = map[string]string{"new": "label"} }
	invalidCPU := value(kubemarkSpec(`"cpu":"-1"`))
	tests := []struct {
		name         string
		old, m       *machinev1beta1.Machine
		want         []string
		wantWarnings []string
	}{
		{name: "providerID set for the first time", old: machine("m", value(validKubemark)), m: machine("m", value(validKubemark), withID(ptr.To("kubemark://m")))},
		{name: "providerID set from empty", old: machine("m", value(validKubemark), withID(ptr.To(""))), m: machine("m", value(validKubemark), withID(ptr.To("kubemark://m")))},
		{name: "providerID unchanged", old: machine("m", value(validKubemark), withID(ptr.To("kubemark://m"))), m: machine("m", value(validKubemark), withID(ptr.To("kubemark://m")), withLabel)},
		{
			name: "providerID changed", old: machine("m", value(validKubemark), withID(ptr.To("kubemark://m"))), m: machine("m", value(validKubemark), withID(ptr.To("kubemark://other"))),
			want: []string{`spec.providerID: Forbidden: is immutable once set (was "kubemark://m")`},
		},
		{
			name: "providerID removed", old: machine("m", value(validKubemark), withID(ptr.To("kubemark://m"))), m: machine("m", value(validKubemark)),
			want: []string{`spec.providerID: Forbidden: is immutable once set`},
		},
		{
			name: "providerSpec made invalid", old: machine("m", value(validKubemark)), m: machine("m", invalidCPU),
			want: []string{`spec.providerSpec.value.cpu: Invalid value: "-1": must be positive`},
		},
		{
			name: "an invalid providerSpec left unchanged only warns", old: machine("m", invalidCPU), m: machine("m", invalidCPU, withLabel),
			wantWarnings: []string{`spec.providerSpec.value.cpu: Invalid value: "-1": must be positive (already invalid`},
		},
		{
			name: "an invalid providerSpec changed to another invalid value", old: machine("m", invalidCPU), m: machine("m", value(kubemarkSpec(`"cpu":"-2"`))),
			want: []string{`spec.providerSpec.value.cpu: Invalid value: "-2": must be positive`},
		},
		{name: "fixing an invalid providerSpec", old: machine("m", invalidCPU), m: machine("m", value(validKubemark))},
		{
			name: "duplicate hook added", old: machine("m", value(validKubemark)),
			m:    machine("m", value(validKubemark), func(m *machinev1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = hooks("a", "a") }),
			want: []string{`spec.lifecycleHooks.preDrain[1].name: Duplicate value: "a"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateMachineUpdate(tc.m, tc.old, kubemarkCluster, nil)
			checkErrors(t, errs, tc.want...)
			checkWarnings(t, warnings, tc.wantWarnings...)
		})
	}
}

func checkWarnings(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got warnings %q, want %q", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("warning %d = %q, want it to contain %q", i, got[i], w)
		}
	}
}

func TestFinalizersOnlyRemoved(t *testing.T) {
	deleting := func(m *machinev1beta1.Machine) {
		m.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		m.Finalizers = []string{"machine.machine.openshift.io", "example.com/other"}
		m.ResourceVersion = "10"
	}
	invalid := value(kubemarkSpec(`"cpu":"-1"`))
	tests := []struct {
		name   string
		old, m *machinev1beta1.Machine
		want   bool
	}{
		{
			name: "deleting, one finalizer removed", want: true,
			old: machine("m", invalid, deleting),
			m:   machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Finalizers = m.Finalizers[1:]; m.ResourceVersion = "11" }),
		},
		{
			name: "deleting, all finalizers removed", want: true,
			old: machine("m", invalid, deleting),
			m:   machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Finalizers = nil }),
		},
		{
			name: "not deleting", want: false,
			old: machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.DeletionTimestamp = nil }),
			m:   machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.DeletionTimestamp = nil; m.Finalizers = nil }),
		},
		{
			name: "deleting, finalizer removed together with another change", want: false,
			old: machine("m", invalid, deleting),
			m: machine("m", invalid, deleting, func(m *machinev1beta1.Machine) {
				m.Finalizers = nil
				m.Spec.LifecycleHooks.PreDrain = hooks("a")
			}),
		},
		{
			name: "deleting, finalizer added", want: false,
			old: machine("m", invalid, deleting),
			m:   machine("m", invalid, deleting, func(m *machinev1beta1.Machine) { m.Finalizers = append(m.Finalizers, "new") }),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FinalizersOnlyRemoved(tc.m, tc.old); got != tc.want {
				t.Errorf("FinalizersOnlyRemoved = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateMachineSet(t *testing.T) {
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
	tests := []struct {
		name string
		ms   *machinev1beta1.MachineSet
		want []string
	}{
		{name: "valid", ms: machineSet("w", sel, map[string]string{"machine.openshift.io/cluster-api-machineset": "workers", "extra": "x"}, value(validKubemark))},
		{
			name: "empty selector", ms: machineSet("w", nil, sel, value(validKubemark)),
			want: []string{"spec.selector: Required value: an empty selector would select every Machine"},
		},
		{
			name: "selector not matching the template labels", ms: machineSet("w", sel, map[string]string{"machine.openshift.io/cluster-api-machineset": "other"}, value(validKubemark)),
			want: []string{`spec.template.metadata.labels: Invalid value: "machine.openshift.io/cluster-api-machineset=other": does not match spec.selector "machine.openshift.io/cluster-api-machineset=workers"`},
		},
		{
			name: "template without labels", ms: machineSet("w", sel, nil, value(validKubemark)),
			want: []string{`spec.template.metadata.labels: Invalid value: "": does not match spec.selector`},
		},
		{
			name: "invalid selector operator",
			ms: machineSet("w", nil, sel, value(validKubemark), func(ms *machinev1beta1.MachineSet) {
				ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near", Values: []string{"b"}}}
			}),
			want: []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near"`},
		},
		{
			name: "invalid selector label value",
			ms:   machineSet("w", map[string]string{"a": "not valid!"}, map[string]string{"a": "not valid!"}, value(validKubemark)),
			want: []string{`spec.selector.matchLabels: Invalid value: "not valid!"`},
		},
		{
			name: "matchExpressions selector matching the template",
			ms: machineSet("w", nil, sel, value(validKubemark), func(ms *machinev1beta1.MachineSet) {
				ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "machine.openshift.io/cluster-api-machineset", Operator: metav1.LabelSelectorOpIn, Values: []string{"workers"}}}
			}),
		},
		{
			name: "invalid template providerSpec", ms: machineSet("w", sel, sel, value(kubemarkSpec(`"pods":"1.5"`))),
			want: []string{`spec.template.spec.providerSpec.value.pods: Invalid value: "1500m": must be a whole number`},
		},
		{
			name: "duplicate template hook",
			ms: machineSet("w", sel, sel, value(validKubemark), func(ms *machinev1beta1.MachineSet) {
				ms.Spec.Template.Spec.LifecycleHooks.PreTerminate = hooks("a", "a")
			}),
			want: []string{`spec.template.spec.lifecycleHooks.preTerminate[1].name: Duplicate value: "a"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMachineSet(tc.ms, kubemarkCluster, nil)
			checkErrors(t, errs, tc.want...)
		})
	}
}

func TestValidateMachineSetUpdate(t *testing.T) {
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
	both := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers", "role": "worker"}
	scale := func(ms *machinev1beta1.MachineSet) { ms.Spec.Replicas = ptr.To[int32](3) }
	tests := []struct {
		name         string
		old, ms      *machinev1beta1.MachineSet
		want         []string
		wantWarnings []string
	}{
		{name: "replicas changed", old: machineSet("w", sel, sel, value(validKubemark)), ms: machineSet("w", sel, sel, value(validKubemark), scale)},
		{
			name: "selector changed", old: machineSet("w", sel, both, value(validKubemark)), ms: machineSet("w", both, both, value(validKubemark)),
			want: []string{`spec.selector: Invalid value: "machine.openshift.io/cluster-api-machineset=workers,role=worker": field is immutable (was "machine.openshift.io/cluster-api-machineset=workers")`},
		},
		{
			name: "template labels no longer match", old: machineSet("w", sel, sel, value(validKubemark)), ms: machineSet("w", sel, map[string]string{"role": "worker"}, value(validKubemark)),
			want: []string{`spec.template.metadata.labels: Invalid value: "role=worker": does not match spec.selector`},
		},
		{
			name: "an already mismatching MachineSet can still be scaled, with a warning",
			old:  machineSet("w", sel, nil, value(validKubemark)), ms: machineSet("w", sel, nil, value(validKubemark), scale),
			wantWarnings: []string{"spec.template.metadata.labels: Invalid value"},
		},
		{
			name: "template providerSpec made invalid", old: machineSet("w", sel, sel, value(validKubemark)), ms: machineSet("w", sel, sel, value(kubemarkSpec(`"cpu":"0"`))),
			want: []string{`spec.template.spec.providerSpec.value.cpu: Invalid value: "0": must be positive`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateMachineSetUpdate(tc.ms, tc.old, kubemarkCluster, nil)
			checkErrors(t, errs, tc.want...)
			checkWarnings(t, warnings, tc.wantWarnings...)
		})
	}
}
