package webhooks

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultProviderSpec(t *testing.T) {
	const allDefaults = `{"apiVersion":"` + kubemarkAPIVersion + `","kind":"` + kubemarkKind + `","cpu":"2","memory":"4Gi","pods":"110"}`
	all := []string{"apiVersion", "kind", "cpu", "memory", "pods"}
	tests := []struct {
		name    string
		in      string // providerSpec.value JSON; "" = no value
		cluster Provider
		want    string // JSON of the value after defaulting; "" = unchanged
		wantSet []string
		// stillInvalid: the defaulted value keeps an error defaulting does not fix.
		stillInvalid bool
	}{
		{
			name: "kubemark group: only the capacity is added", in: `{"apiVersion":"` + kubemarkAPIVersion + `"}`, cluster: ProviderUnknown,
			want: allDefaults, wantSet: []string{"kind", "cpu", "memory", "pods"},
		},
		{
			name: "no apiVersion and kind on a kubemark cluster: everything", in: `{}`, cluster: ProviderKubemark,
			want: allDefaults, wantSet: all,
		},
		{name: "no value on a kubemark cluster: everything", in: "", cluster: ProviderKubemark, want: allDefaults, wantSet: all},
		{name: "null value on a kubemark cluster: everything", in: "null", cluster: ProviderKubemark, want: allDefaults, wantSet: all},
		{name: "no apiVersion and kind, unknown platform: unchanged", in: `{"cpu":"1"}`, cluster: ProviderUnknown},
		{name: "no value, unknown platform: unchanged", in: "", cluster: ProviderUnknown},
		{
			name: "kubemark kind without apiVersion: provider by kind", in: `{"kind":"` + kubemarkKind + `","cpu":"1","memory":"1Gi","pods":"10"}`, cluster: ProviderUnknown,
			want: `{"apiVersion":"` + kubemarkAPIVersion + `","kind":"` + kubemarkKind + `","cpu":"1","memory":"1Gi","pods":"10"}`, wantSet: []string{"apiVersion"},
		},
		{name: "another kind without apiVersion on a kubemark cluster: unchanged", in: `{"kind":"AWSMachineProviderConfig"}`, cluster: ProviderKubemark},
		{name: "another provider's group on a kubemark cluster: unchanged", in: `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`, cluster: ProviderKubemark},
		{name: "complete kubemark spec: unchanged", in: kubemarkSpec(`"cpu":"8","memory":"16Gi","pods":"250"`), cluster: ProviderKubemark},
		{
			name: "given values, null and empty strings", in: `{"apiVersion":"","kind":null,"cpu":"4","memory":null}`, cluster: ProviderKubemark,
			want:    `{"apiVersion":"` + kubemarkAPIVersion + `","kind":"` + kubemarkKind + `","cpu":"4","memory":"4Gi","pods":"110"}`,
			wantSet: []string{"apiVersion", "kind", "memory", "pods"},
		},
		{
			name: "other keys are kept verbatim, unknown ones too (validation reports them)", in: kubemarkSpec(`"bootDelay":"30s","health":{"mode":"Once"},"cpus":1e3`), cluster: ProviderUnknown,
			want:    kubemarkSpec(`"bootDelay":"30s","health":{"mode":"Once"},"cpus":1e3,"cpu":"2","memory":"4Gi","pods":"110"`),
			wantSet: []string{"cpu", "memory", "pods"}, stillInvalid: true,
		},
		{name: "a wrong-version kubemark apiVersion is not rewritten", in: `{"apiVersion":"kubemark.machine-api-operator.io/v9","kind":"` + kubemarkKind + `","cpu":"1","memory":"1Gi","pods":"1"}`, cluster: ProviderKubemark},
		{name: "not an object: unchanged", in: `[1,2]`, cluster: ProviderKubemark},
		{name: "invalid JSON: unchanged", in: `{"cpu":`, cluster: ProviderKubemark},
		{name: "a key given twice: unchanged", in: `{"cpu":"1","cpu":"2"}`, cluster: ProviderKubemark},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := value(tc.in)
			before := ps.DeepCopy()
			set, _ := DefaultProviderSpec(&ps, ClusterInfo{Provider: tc.cluster})
			if !reflect.DeepEqual(set, tc.wantSet) {
				t.Errorf("defaulted keys = %q, want %q", set, tc.wantSet)
			}
			if tc.want == "" {
				if !reflect.DeepEqual(&ps, before) {
					t.Errorf("value changed to %s, want it unchanged", ps.Value.Raw)
				}
				return
			}
			jsonEqual(t, ps.Value.Raw, tc.want)
			// The result passes the provider's own strict check.
			if errs, _ := ValidateProviderSpec(ps, unknownCluster, "", "", nil, specPath.Child("providerSpec", "value")); (len(errs) > 0) != tc.stillInvalid {
				t.Errorf("validation of the defaulted value: %v (want errors: %v)", errs, tc.stillInvalid)
			}
		})
	}
}

func TestDefaultMachine(t *testing.T) {
	tests := []struct {
		name       string
		labels     map[string]string
		ps         string
		cluster    ClusterInfo
		wantLabels map[string]string
		want       Defaulted
	}{
		{
			name: "kubemark cluster: label and providerSpec", ps: `{}`, cluster: kubemarkCluster,
			wantLabels: map[string]string{ClusterIDLabel: testInfraName},
			want:       Defaulted{Labels: true, ProviderSpec: []string{"apiVersion", "kind", "cpu", "memory", "pods"}},
		},
		{
			name: "existing cluster label is never overwritten", labels: map[string]string{ClusterIDLabel: "other", "a": "b"},
			ps: kubemarkSpec(`"cpu":"1","memory":"1Gi","pods":"1"`), cluster: kubemarkCluster,
			wantLabels: map[string]string{ClusterIDLabel: "other", "a": "b"},
		},
		{
			name: "existing empty cluster label is kept", labels: map[string]string{ClusterIDLabel: ""},
			ps: kubemarkSpec(`"cpu":"1","memory":"1Gi","pods":"1"`), cluster: kubemarkCluster,
			wantLabels: map[string]string{ClusterIDLabel: ""},
		},
		{
			name: "other labels are kept", labels: map[string]string{"a": "b"}, ps: `{"apiVersion":"foo.example.com/v1"}`, cluster: kubemarkCluster,
			wantLabels: map[string]string{"a": "b", ClusterIDLabel: testInfraName}, want: Defaulted{Labels: true},
		},
		{
			name: "no Infrastructure: providerSpec by group only, no label", ps: `{"apiVersion":"` + kubemarkAPIVersion + `"}`, cluster: unknownCluster,
			want: Defaulted{ProviderSpec: []string{"kind", "cpu", "memory", "pods"}},
		},
		{name: "no Infrastructure, no apiVersion: nothing", ps: `{}`, cluster: unknownCluster},
		{
			name: "infrastructure name on another platform: label only", ps: `{}`, cluster: ClusterInfo{InfrastructureName: testInfraName},
			wantLabels: map[string]string{ClusterIDLabel: testInfraName}, want: Defaulted{Labels: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := machine("m", value(tc.ps), func(m *machinev1beta1.Machine) { m.Labels = tc.labels })
			inputLabels := map[string]string{}
			for k, v := range tc.labels {
				inputLabels[k] = v
			}
			got := DefaultMachine(m, tc.cluster)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DefaultMachine = %+v, want %+v", got, tc.want)
			}
			if got.Changed() != (tc.want.Labels || tc.want.Finalizer || len(tc.want.ProviderSpec) > 0) {
				t.Errorf("Changed() = %v", got.Changed())
			}
			if len(m.Labels) != 0 || len(tc.wantLabels) != 0 {
				if !reflect.DeepEqual(m.Labels, tc.wantLabels) {
					t.Errorf("labels = %v, want %v", m.Labels, tc.wantLabels)
				}
			}
			if len(tc.labels) > 0 && !reflect.DeepEqual(tc.labels, inputLabels) {
				t.Errorf("the input label map was modified: %v", tc.labels)
			}
		})
	}
}

func TestDefaultMachineFinalizer(t *testing.T) {
	const ns, fin = "openshift-machine-api", machinev1beta1.MachineFinalizer
	kubemark := ClusterInfo{Provider: ProviderKubemark, InfrastructureName: testInfraName, MachineNamespace: ns}
	onPlatform := func(p Provider) ClusterInfo {
		return ClusterInfo{Provider: p, InfrastructureName: testInfraName, MachineNamespace: ns}
	}
	awsSpec := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`
	tests := []struct {
		name       string
		ps         string
		cluster    ClusterInfo
		mutate     func(*machinev1beta1.Machine)
		finalizers []string // the Machine's before defaulting
		want       []string // after; nil: none
	}{
		{name: "kubemark Machine on a kubemark cluster: added", ps: `{}`, cluster: kubemark, want: []string{fin}},
		{name: "other finalizers are kept, ours appended", ps: validKubemark, cluster: kubemark, finalizers: []string{"example.com/hold"}, want: []string{"example.com/hold", fin}},
		{name: "already there: unchanged, not twice", ps: validKubemark, cluster: kubemark, finalizers: []string{"example.com/hold", fin}, want: []string{"example.com/hold", fin}},
		{name: "authoritativeAPI MachineAPI: added", ps: validKubemark, cluster: kubemark, want: []string{fin},
			mutate: func(m *machinev1beta1.Machine) { m.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityMachineAPI }},
		{name: "authoritativeAPI ClusterAPI: our controller leaves it alone", ps: validKubemark, cluster: kubemark,
			mutate: func(m *machinev1beta1.Machine) { m.Spec.AuthoritativeAPI = machinev1beta1.MachineAuthorityClusterAPI }},
		{name: "another provider's Machine on a kubemark cluster", ps: awsSpec, cluster: kubemark},
		{name: "another provider's kind without apiVersion on a kubemark cluster", ps: `{"kind":"AWSMachineProviderConfig"}`, cluster: kubemark},
		{name: "unknown cluster provider", ps: validKubemark, cluster: ClusterInfo{InfrastructureName: testInfraName, MachineNamespace: ns}},
		{name: "no type, unknown cluster provider", ps: `{}`, cluster: ClusterInfo{InfrastructureName: testInfraName, MachineNamespace: ns}},
		{name: "deletionTimestamp set", ps: validKubemark, cluster: kubemark,
			mutate: func(m *machinev1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }},
		{name: "another namespace: no controller watches it", ps: validKubemark, cluster: kubemark,
			mutate: func(m *machinev1beta1.Machine) { m.Namespace = "default" }},
		{name: "the controller's namespace unknown", ps: validKubemark, cluster: kubemarkCluster},
		{name: "the cluster platform's Machine: added", ps: awsSpec, cluster: onPlatform(ProviderAWS), want: []string{fin}},
		{name: "a value naming no type is the cluster platform's: added", ps: `{"instanceType":"m5.large"}`, cluster: onPlatform(ProviderAWS), want: []string{fin}},
		// This project's vSphere controller serves VSphereMachineProviderSpec in machine.openshift.io only.
		{name: "the platform's kind in its legacy group", ps: `{"apiVersion":"vsphereprovider.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec"}`, cluster: onPlatform(ProviderVSphere)},
		{name: "the platform's group without its kind", ps: `{"apiVersion":"machine.openshift.io/v1beta1"}`, cluster: onPlatform(ProviderVSphere)},
		{name: "a kubemark Machine on a vSphere cluster", ps: validKubemark, cluster: onPlatform(ProviderVSphere)},
		{name: "providerSpec.value not an object", ps: `[1]`, cluster: kubemark},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.finalizers)
			m := machine("m", value(tc.ps), func(m *machinev1beta1.Machine) { m.Finalizers = in })
			if tc.mutate != nil {
				tc.mutate(m)
			}
			d := DefaultMachine(m, tc.cluster)
			if !reflect.DeepEqual(m.Finalizers, tc.want) && (len(m.Finalizers) > 0 || len(tc.want) > 0) {
				t.Errorf("finalizers = %q, want %q", m.Finalizers, tc.want)
			}
			if added := !slices.Equal(tc.want, tc.finalizers); d.Finalizer != added || (added && !d.Changed()) {
				t.Errorf("Defaulted.Finalizer = %v (Changed %v), want %v", d.Finalizer, d.Changed(), added)
			}
			if !slices.Equal(in, tc.finalizers) {
				t.Errorf("the input finalizer list was modified: %q", in)
			}
		})
	}
}

func TestDefaultMachineSet(t *testing.T) {
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
	t.Run("template spec, template labels and own labels", func(t *testing.T) {
		ms := machineSet("workers", sel, map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}, value(`{}`))
		got := DefaultMachineSet(ms, kubemarkCluster)
		want := Defaulted{Labels: true, ProviderSpec: []string{"apiVersion", "kind", "cpu", "memory", "pods"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("DefaultMachineSet = %+v, want %+v", got, want)
		}
		if ms.Labels[ClusterIDLabel] != testInfraName || ms.Spec.Template.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels = %v, template labels = %v; want the cluster label on both", ms.Labels, ms.Spec.Template.Labels)
		}
		if _, ok := ms.Spec.Selector.MatchLabels[ClusterIDLabel]; ok {
			t.Errorf("the selector was changed: %v", ms.Spec.Selector)
		}
		jsonEqual(t, ms.Spec.Template.Spec.ProviderSpec.Value.Raw,
			`{"apiVersion":"`+kubemarkAPIVersion+`","kind":"`+kubemarkKind+`","cpu":"2","memory":"4Gi","pods":"110"}`)
		if errs, _ := ValidateMachineSet(ms, kubemarkCluster, nil); len(errs) > 0 {
			t.Errorf("defaulted MachineSet is invalid: %v", errs)
		}
	})
	t.Run("existing labels and a foreign provider: unchanged", func(t *testing.T) {
		labels := map[string]string{ClusterIDLabel: "mine", "machine.openshift.io/cluster-api-machineset": "workers"}
		ms := machineSet("workers", sel, labels, value(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`),
			func(ms *machinev1beta1.MachineSet) { ms.Labels = map[string]string{ClusterIDLabel: "mine"} })
		before := ms.DeepCopy()
		if got := DefaultMachineSet(ms, kubemarkCluster); got.Changed() {
			t.Errorf("DefaultMachineSet = %+v, want no change", got)
		}
		if !reflect.DeepEqual(ms, before) {
			t.Errorf("MachineSet changed: %+v", ms)
		}
	})
}

// TestProviderSpecRefusal: as OpenShift's defaulting webhook, a value of the cluster's platform that is
// missing or does not decode is refused, with OpenShift's one field error; other providers' are not.
func TestProviderSpecRefusal(t *testing.T) {
	const missing = "providerSpec.value: Required value: a value must be provided"
	azure := ClusterInfo{Provider: ProviderAzure, InfrastructureName: testInfraName}
	tests := []struct {
		name    string
		in      string // "" = no value
		cluster ClusterInfo
		want    string // the one error's text, or a prefix of it; "" = none
	}{
		{name: "AWS, no value", cluster: awsCluster, want: missing},
		{name: "AWS, null", in: "null", cluster: awsCluster, want: missing},
		{name: "Azure, no value", cluster: azure, want: missing},
		{name: "AWS, a value of the wrong shape", in: `{"instanceType":{"a":1}}`, cluster: awsCluster,
			want: "providerSpec.value: Invalid value: "},
		{name: "AWS, a number for a string (decoded as OpenShift does)", in: `{"instanceType":5}`, cluster: awsCluster},
		{name: "AWS, not an object", in: `[1]`, cluster: awsCluster, want: "providerSpec.value: Invalid value: "},
		{name: "AWS, an empty value", in: `{}`, cluster: awsCluster},
		{name: "AWS, another platform's kind", in: `{"kind":"GCPMachineProviderSpec","zone":5}`, cluster: awsCluster},
		{name: "AWS, a kubemark value", in: `{"apiVersion":"` + kubemarkAPIVersion + `"}`, cluster: awsCluster},
		{name: "kubemark, no value (defaulted instead)", cluster: kubemarkCluster},
		{name: "unknown platform, no value", cluster: unknownCluster},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := ProviderSpecRefusal(value(tc.in), tc.cluster)
			if tc.want == "" {
				checkErrors(t, errs)
				return
			}
			// Breaks if: the refusal adds validation's other errors (OpenShift's names only this one).
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
				t.Errorf("errors = %v, want one starting %q", errs, tc.want)
			}
		})
	}
}
