package machineset

import (
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateMachineSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*machinev1beta1.MachineSet)
		// want are substrings of the aggregated error; none means valid.
		want []string
	}{
		{"valid", func(*machinev1beta1.MachineSet) {}, nil},
		{"valid with expressions", func(ms *machinev1beta1.MachineSet) {
			ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "extra", Operator: metav1.LabelSelectorOpExists}}
		}, nil},
		{"valid zero replicas", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = 0 }, nil},
		{"valid delete policy", func(ms *machinev1beta1.MachineSet) { ms.Spec.DeletePolicy = "Oldest" }, nil},
		{"nil replicas", func(ms *machinev1beta1.MachineSet) { ms.Spec.Replicas = nil }, []string{"spec.replicas: Required value"}},
		{"negative replicas", func(ms *machinev1beta1.MachineSet) { *ms.Spec.Replicas = -1 },
			[]string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
		{"empty selector", func(ms *machinev1beta1.MachineSet) { ms.Spec.Selector = metav1.LabelSelector{} },
			[]string{`spec.selector: Invalid value: "": must not be empty`}},
		{"selector does not match template", func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Labels = map[string]string{"set": "b"} },
			[]string{`spec.selector: Invalid value: "set=a": selector does not match template labels`}},
		{"template without labels", func(ms *machinev1beta1.MachineSet) { ms.Spec.Template.Labels = nil },
			[]string{"selector does not match template labels"}},
		{"invalid operator", func(ms *machinev1beta1.MachineSet) {
			ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near", Values: []string{"v"}}}
		}, []string{"spec.selector.matchExpressions[0].operator", "Near"}},
		{"In without values", func(ms *machinev1beta1.MachineSet) {
			ms.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn}}
		}, []string{"spec.selector.matchExpressions[0].values"}},
		{"invalid label value", func(ms *machinev1beta1.MachineSet) { ms.Spec.Selector.MatchLabels["set"] = "not valid!" },
			[]string{"spec.selector.matchLabels"}},
		{"unknown delete policy", func(ms *machinev1beta1.MachineSet) { ms.Spec.DeletePolicy = "Largest" },
			[]string{`spec.deletePolicy: Unsupported value: "Largest"`, `"Random"`, `"Newest"`, `"Oldest"`}},
		{"several errors", func(ms *machinev1beta1.MachineSet) {
			ms.Spec.Replicas = nil
			ms.Spec.Selector = metav1.LabelSelector{}
		}, []string{"spec.replicas: Required value", "spec.selector: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := testMachineSet(3)
			tt.mutate(ms)
			errs := ValidateMachineSet(ms)
			if len(tt.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("no errors, want %q", tt.want)
			}
			got := errs.ToAggregate().Error()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("errors %q lack %q", got, w)
				}
			}
		})
	}
}
