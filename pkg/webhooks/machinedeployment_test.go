package webhooks

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var mdLabels = map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}

// machineDeployment is a MachineDeployment selecting mdLabels, its template
// carrying them, with the providerSpec ps.
func machineDeployment(ps machinev1beta1.ProviderSpec, mutate ...func(*mdv1beta1.MachineDeployment)) *mdv1beta1.MachineDeployment {
	md := &mdv1beta1.MachineDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machine.openshift.io/v1beta1", Kind: "MachineDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "workers", Namespace: "openshift-machine-api"},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Selector: metav1.LabelSelector{MatchLabels: mdLabels},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: mdLabels},
				Spec:       machinev1beta1.MachineSpec{ProviderSpec: ps},
			},
		},
	}
	for _, f := range mutate {
		f(md)
	}
	return md
}

func rollingUpdate(maxSurge, maxUnavailable *intstr.IntOrString) func(*mdv1beta1.MachineDeployment) {
	return func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{
			Type:          mdv1beta1.RollingUpdateStrategy,
			RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: maxSurge, MaxUnavailable: maxUnavailable},
		}
	}
}

func intOrString(s string) *intstr.IntOrString { return ptr.To(intstr.Parse(s)) }

func TestDefaultMachineDeployment(t *testing.T) {
	quarter := intOrString("25%")
	tests := []struct {
		name    string
		md      *mdv1beta1.MachineDeployment
		want    mdv1beta1.MachineDeploymentSpec // without selector and template
		wantSet []string
	}{
		{
			name: "minimal: a Deployment's defaults",
			md:   machineDeployment(value(validKubemark)),
			want: mdv1beta1.MachineDeploymentSpec{
				Replicas: ptr.To[int32](1),
				Strategy: mdv1beta1.MachineDeploymentStrategy{Type: "RollingUpdate",
					RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: quarter, MaxUnavailable: quarter}},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			},
			wantSet: []string{"replicas", "strategy", "revisionHistoryLimit", "progressDeadlineSeconds"},
		},
		{
			name: "given values are kept; only the missing maxUnavailable is added",
			md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("1"), nil), func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Replicas, md.Spec.RevisionHistoryLimit, md.Spec.ProgressDeadlineSeconds = ptr.To[int32](0), ptr.To[int32](0), ptr.To[int32](30)
			}),
			want: mdv1beta1.MachineDeploymentSpec{
				Replicas: ptr.To[int32](0),
				Strategy: mdv1beta1.MachineDeploymentStrategy{Type: "RollingUpdate",
					RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: intOrString("1"), MaxUnavailable: quarter}},
				RevisionHistoryLimit: ptr.To[int32](0), ProgressDeadlineSeconds: ptr.To[int32](30),
			},
			wantSet: []string{"strategy"},
		},
		{
			name: "Recreate gets no rollingUpdate",
			md: machineDeployment(value(validKubemark), func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Strategy.Type = mdv1beta1.RecreateStrategy
			}),
			want: mdv1beta1.MachineDeploymentSpec{
				Replicas: ptr.To[int32](1), Strategy: mdv1beta1.MachineDeploymentStrategy{Type: "Recreate"},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			},
			wantSet: []string{"replicas", "revisionHistoryLimit", "progressDeadlineSeconds"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := DefaultMachineDeployment(tc.md, unknownCluster)
			if !reflect.DeepEqual(d.Spec, tc.wantSet) {
				t.Errorf("defaulted fields = %q, want %q", d.Spec, tc.wantSet)
			}
			got := tc.md.Spec
			got.Selector, got.Template = metav1.LabelSelector{}, machinev1beta1.MachineTemplateSpec{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}

	t.Run("the template is defaulted as a MachineSet's", func(t *testing.T) {
		md := machineDeployment(value(`{"cpu":"1"}`))
		d := DefaultMachineDeployment(md, kubemarkCluster)
		if !d.Labels || md.Labels[ClusterIDLabel] != testInfraName || md.Spec.Template.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels %v, template labels %v: want the cluster-ID label %q on both", md.Labels, md.Spec.Template.Labels, testInfraName)
		}
		if _, ok := md.Spec.Selector.MatchLabels[ClusterIDLabel]; ok {
			t.Errorf("the selector got the cluster-ID label: %v", md.Spec.Selector.MatchLabels)
		}
		jsonEqual(t, md.Spec.Template.Spec.ProviderSpec.Value.Raw, kubemarkSpec(`"cpu":"1","memory":"4Gi","pods":"110"`))
	})
}

func TestValidateMachineDeployment(t *testing.T) {
	strategy := func(typ mdv1beta1.MachineDeploymentStrategyType, ru *mdv1beta1.RollingUpdateMachineDeployment) func(*mdv1beta1.MachineDeployment) {
		return func(md *mdv1beta1.MachineDeployment) {
			md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: typ, RollingUpdate: ru}
		}
	}
	deadline := func(progress, minReady int32) func(*mdv1beta1.MachineDeployment) {
		return func(md *mdv1beta1.MachineDeployment) {
			md.Spec.ProgressDeadlineSeconds, md.Spec.MinReadySeconds = ptr.To(progress), minReady
		}
	}
	tests := []struct {
		name string
		md   *mdv1beta1.MachineDeployment
		want []string
	}{
		{name: "minimal", md: machineDeployment(value(validKubemark))},
		{name: "surge 1, none unavailable", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("1"), intOrString("0")))},
		{name: "percentages up to 100%", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("100%"), intOrString("100%")))},
		{name: "the largest counts", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("10000"), intOrString("10000")))},
		{name: "Recreate", md: machineDeployment(value(validKubemark), strategy(mdv1beta1.RecreateStrategy, nil))},
		{name: "OnDelete", md: machineDeployment(value(validKubemark), strategy(mdv1beta1.OnDeleteStrategy, nil))},
		{
			name: "empty selector", md: machineDeployment(value(validKubemark), func(md *mdv1beta1.MachineDeployment) { md.Spec.Selector = metav1.LabelSelector{} }),
			want: []string{"spec.selector: Required value: an empty selector would select every Machine in the namespace; set matchLabels or matchExpressions matching spec.template.metadata.labels"},
		},
		{
			name: "selector not matching the template",
			md: machineDeployment(value(validKubemark), func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Template.Labels = map[string]string{"role": "worker"}
			}),
			want: []string{`spec.template.metadata.labels: Invalid value: "role=worker": does not match spec.selector "machine.openshift.io/cluster-api-machineset=workers"`},
		},
		{
			name: "rollingUpdate with Recreate",
			md:   machineDeployment(value(validKubemark), strategy(mdv1beta1.RecreateStrategy, &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: intOrString("1")})),
			want: []string{`spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy type is "Recreate"; remove it or set type to "RollingUpdate"`},
		},
		{
			name: "rollingUpdate with OnDelete",
			md:   machineDeployment(value(validKubemark), strategy(mdv1beta1.OnDeleteStrategy, &mdv1beta1.RollingUpdateMachineDeployment{})),
			want: []string{`spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy type is "OnDelete"; remove it or set type to "RollingUpdate"`},
		},
		{
			name: "unknown strategy type", md: machineDeployment(value(validKubemark), strategy("Rolling", nil)),
			want: []string{`spec.strategy.type: Unsupported value: "Rolling": supported values: "RollingUpdate", "Recreate", "OnDelete"`},
		},
		{
			name: "negative numbers", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("-1"), intOrString("-2"))),
			want: []string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: -2: must be greater than or equal to 0`,
			},
		},
		{
			name: "not a number or percentage", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("one"), intOrString("-5%"))),
			want: []string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: "one": must be an integer or percentage (e.g '5%')`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "-5%": must be an integer or percentage (e.g '5%')`,
			},
		},
		{
			name: "maxUnavailable above 100%", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("1"), intOrString("101%"))),
			want: []string{`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%`},
		},
		{
			// Breaks if: the bound were not checked (2147483647 wraps replicas+surge; docs/machinedeployment.md).
			name: "counts above 10000", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("2147483647"), intOrString("10001"))),
			want: []string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: 2147483647: must be less than or equal to 10000`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 10001: must be less than or equal to 10000`,
			},
		},
		{
			// Breaks if: maxSurge kept Deployments' unbounded percentage, or a percentage beyond
			// int64 (which Atoi reads as 0) passed.
			name: "percentages above 100%", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("200%"), intOrString("99999999999999999999%"))),
			want: []string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: "200%": must not be greater than 100%`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "99999999999999999999%": must not be greater than 100%`,
			},
		},
		{
			name: "both 0", md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("0%"), intOrString("0"))),
			want: []string{`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0": may not be 0 when maxSurge is 0: the rollout could neither add nor remove a Machine`},
		},
		{name: "progressDeadlineSeconds above minReadySeconds", md: machineDeployment(value(validKubemark), deadline(11, 10))},
		{
			name: "progressDeadlineSeconds equal to minReadySeconds", md: machineDeployment(value(validKubemark), deadline(10, 10)),
			want: []string{`spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds (10)`},
		},
		{
			name: "invalid template providerSpec", md: machineDeployment(value(kubemarkSpec(`"cpu":"0"`))),
			want: []string{`spec.template.spec.providerSpec.value.cpu: Invalid value: "0": must be positive`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMachineDeployment(tc.md, kubemarkCluster, nil)
			checkExactErrors(t, errs, tc.want...)
		})
	}
}

// checkExactErrors asserts that errs are exactly the wanted messages, in order.
func checkExactErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
		t.Errorf("errors:\n got  %q\n want %q", got, want)
	}
}

func TestValidateMachineDeploymentUpdate(t *testing.T) {
	both := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers", "role": "worker"}
	widerTemplate := func(md *mdv1beta1.MachineDeployment) { md.Spec.Template.Labels = both }
	tests := []struct {
		name         string
		old, md      *mdv1beta1.MachineDeployment
		want         []string
		wantWarnings []string
	}{
		{
			name: "template changed: a rollout", old: machineDeployment(value(validKubemark)),
			md: machineDeployment(value(kubemarkSpec(`"cpu":"4"`))),
		},
		{
			name: "selector changed", old: machineDeployment(value(validKubemark), widerTemplate),
			md:   machineDeployment(value(validKubemark), widerTemplate, func(md *mdv1beta1.MachineDeployment) { md.Spec.Selector.MatchLabels = both }),
			want: []string{`spec.selector: Invalid value: "machine.openshift.io/cluster-api-machineset=workers,role=worker": field is immutable (was "machine.openshift.io/cluster-api-machineset=workers")`},
		},
		{
			name: "an invalid strategy left unchanged is a warning",
			old:  machineDeployment(value(validKubemark), rollingUpdate(intOrString("0"), intOrString("0"))),
			md: machineDeployment(value(validKubemark), rollingUpdate(intOrString("0"), intOrString("0")), func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Paused = true
			}),
			wantWarnings: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateMachineDeploymentUpdate(tc.md, tc.old, kubemarkCluster, nil)
			checkExactErrors(t, errs, tc.want...)
			checkWarnings(t, warnings, tc.wantWarnings...)
		})
	}
}

func TestMachineDeploymentHandlers(t *testing.T) {
	add := func(path string, v any) patchOp { return patchOp{Op: "add", Path: path, Value: v} }
	defaults := []patchOp{
		add("/spec/progressDeadlineSeconds", float64(600)), add("/spec/replicas", float64(1)), add("/spec/revisionHistoryLimit", float64(10)),
		add("/spec/strategy/rollingUpdate", map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}),
		add("/spec/strategy/type", "RollingUpdate"),
	}
	complete := func(md *mdv1beta1.MachineDeployment) {
		DefaultMachineDeployment(md, kubemarkCluster)
	}
	recreate := func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RecreateStrategy}
	}
	toRollingUpdate := func(md *mdv1beta1.MachineDeployment) {
		md.Spec.Strategy = mdv1beta1.MachineDeploymentStrategy{Type: mdv1beta1.RollingUpdateStrategy}
	}
	tests := []struct {
		name    string
		op      admissionv1.Operation
		obj     *mdv1beta1.MachineDeployment
		old     *mdv1beta1.MachineDeployment
		want    []patchOp
		wantErr string // the validating handler's refusal; "" = admitted
	}{
		{
			name: "create: spec defaults, the cluster-ID label and the template's providerSpec", op: admissionv1.Create,
			obj: machineDeployment(value(kubemarkSpec(`"cpu":"1","memory":"1Gi"`))),
			want: append(defaults,
				add("/metadata/labels", map[string]any{ClusterIDLabel: testInfraName}),
				add("/spec/template/metadata/labels/machine.openshift.io~1cluster-api-cluster", testInfraName),
				add("/spec/template/spec/providerSpec/value/pods", "110")),
		},
		{name: "create: complete", op: admissionv1.Create, obj: machineDeployment(value(validKubemark), complete)},
		{
			name: "update to RollingUpdate: maxSurge and maxUnavailable", op: admissionv1.Update,
			old: machineDeployment(value(validKubemark), complete, recreate), obj: machineDeployment(value(validKubemark), complete, toRollingUpdate),
			want: []patchOp{add("/spec/strategy/rollingUpdate", map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"})},
		},
		{
			name: "update leaving the template as it was: the template is not defaulted", op: admissionv1.Update,
			old:  machineDeployment(value(`{"cpu":"1"}`), func(md *mdv1beta1.MachineDeployment) { md.Spec.Paused = true }),
			obj:  machineDeployment(value(`{"cpu":"1"}`)),
			want: defaults,
		},
		{
			name: "update changing the template: defaulted", op: admissionv1.Update,
			old: machineDeployment(value(validKubemark), complete),
			obj: machineDeployment(value(validKubemark), complete, func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Template.Spec.ProviderSpec = value(kubemarkSpec(`"cpu":"8"`))
			}),
			want: []patchOp{add("/spec/template/spec/providerSpec/value/memory", "4Gi"), add("/spec/template/spec/providerSpec/value/pods", "110")},
		},
		{
			name: "create refused with the field path", op: admissionv1.Create,
			obj:     machineDeployment(value(validKubemark), complete, rollingUpdate(intOrString("0"), intOrString("0"))),
			wantErr: `MachineDeployment.machine.openshift.io "workers" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0": may not be 0 when maxSurge is 0`,
		},
		{
			name: "update refused: selector changed", op: admissionv1.Update,
			old: machineDeployment(value(validKubemark), complete),
			obj: machineDeployment(value(validKubemark), complete, func(md *mdv1beta1.MachineDeployment) {
				md.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpDoesNotExist}}
			}),
			wantErr: `MachineDeployment.machine.openshift.io "workers" is invalid: spec.selector: Invalid value: "machine.openshift.io/cluster-api-machineset=workers,!role": field is immutable`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := Handlers(Options{Reader: kubemarkReader(), LookupTimeout: time.Second})
			req := request(t, tc.op, tc.obj, tc.old)
			resp := hs[MutateMachineDeploymentPath].Handle(context.Background(), req)
			if !resp.Allowed {
				t.Fatalf("defaulting refused: %+v", resp.Result)
			}
			if got, want := sortedPatches(t, resp.Patches), sortedPatches(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("patches:\n got %+v\nwant %+v", got, want)
			}
			resp = hs[ValidateMachineDeploymentPath].Handle(context.Background(), req)
			switch {
			case tc.wantErr == "" && !resp.Allowed:
				t.Errorf("refused: %s", resp.Result.Message)
			case tc.wantErr != "" && resp.Allowed:
				t.Errorf("admitted, want refused with %q", tc.wantErr)
			case tc.wantErr != "" && (resp.Result.Code != 422 || !strings.HasPrefix(resp.Result.Message, tc.wantErr)):
				t.Errorf("refused with %d %q, want 422 %q", resp.Result.Code, resp.Result.Message, tc.wantErr)
			}
		})
	}
}

// TestSampleMachineDeployment: config/samples/machinedeployment.yaml (make
// run, README) decodes strictly, passes validation on a kubemark cluster and
// keeps its strategy through defaulting.
func TestSampleMachineDeployment(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "machinedeployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	md := &mdv1beta1.MachineDeployment{}
	if err := yaml.UnmarshalStrict(data, md); err != nil {
		t.Fatal(err)
	}
	if errs, _ := ValidateMachineDeployment(md, ClusterInfo{Provider: ProviderKubemark, InfrastructureName: "kubemark"}, nil); len(errs) > 0 {
		t.Errorf("the sample is invalid: %v", errs)
	}
	d := DefaultMachineDeployment(md, ClusterInfo{Provider: ProviderKubemark, InfrastructureName: "kubemark"})
	if want := []string{"revisionHistoryLimit", "progressDeadlineSeconds"}; d.Labels || len(d.ProviderSpec) > 0 || !reflect.DeepEqual(d.Spec, want) {
		t.Errorf("defaulting the sample set labels %v, providerSpec %q, spec %q; want only spec %q", d.Labels, d.ProviderSpec, d.Spec, want)
	}
	if ru := md.Spec.Strategy.RollingUpdate; *md.Spec.Replicas != 3 || ru.MaxSurge.String() != "1" || ru.MaxUnavailable.String() != "0" {
		t.Errorf("replicas %d, strategy %+v; want 3 replicas, maxSurge 1, maxUnavailable 0", *md.Spec.Replicas, ru)
	}
}
