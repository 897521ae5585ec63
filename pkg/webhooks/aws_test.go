package webhooks

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

var awsCluster = ClusterInfo{Provider: ProviderAWS, InfrastructureName: testInfraName, AWSRegion: "us-east-1"}

// awsInstanceType is the instance type OpenShift defaults on this machine's
// architecture.
func awsInstanceType() string {
	if runtime.GOARCH == "arm64" {
		return "m6g.large"
	}
	return "m5.large"
}

func TestDefaultAWS(t *testing.T) {
	filled := `"instanceType":"` + awsInstanceType() + `","placement":{"region":"us-east-1"},` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"aws-cloud-credentials"}`
	all := []string{"credentialsSecret", "instanceType", "placement", "userDataSecret"}
	runDefaulting(t, []defaultingCase{
		{name: "only the AMI: the rest is filled in", cluster: awsCluster, in: `{"ami":{"id":"ami-1"}}`,
			want: `{"ami":{"id":"ami-1"},` + filled + `}`, wantSet: all},
		{name: "empty value", cluster: awsCluster, in: `{}`, want: `{` + filled + `}`, wantSet: all},
		{name: "the AWS kind", cluster: awsCluster, in: `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig"}`,
			want: `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig",` + filled + `}`, wantSet: all},
		{name: "given values are kept", cluster: awsCluster,
			in: `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1","availabilityZone":"eu-west-1a"},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`},
		{name: "a zone without region gets the cluster's region; unknown keys stay", cluster: awsCluster,
			in:      `{"instanceType":"c5.xlarge","placement":{"availabilityZone":"us-east-1a","rack":7},"userDataSecret":{},"credentialsSecret":{"name":"c"},"custom":true}`,
			want:    `{"instanceType":"c5.xlarge","placement":{"availabilityZone":"us-east-1a","rack":7,"region":"us-east-1"},"userDataSecret":{},"credentialsSecret":{"name":"c"},"custom":true}`,
			wantSet: []string{"placement"}},
		{name: "no region known", cluster: ClusterInfo{Provider: ProviderAWS}, in: `{"instanceType":"t","userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`},
		{name: "no value: left to validation", cluster: awsCluster, in: ""},
		{name: "another platform's kind", cluster: awsCluster, in: `{"kind":"GCPMachineProviderSpec"}`},
		{name: "an AWS value on a kubemark cluster", cluster: kubemarkCluster, in: `{"kind":"AWSMachineProviderConfig"}`},
		{name: "not an object", cluster: awsCluster, in: `[1]`},
	})
}

func TestDefaultAWSInstanceTypeByArch(t *testing.T) {
	tests := []struct{ arch, want, warning string }{
		{"amd64", "m5.large", `setting the default instance type "m5.large" for cloud provider "AWS", based on the control plane architecture ("amd64")`},
		{"arm64", "m6g.large", `setting the default instance type "m6g.large" for cloud provider "AWS", based on the control plane architecture ("arm64")`},
		{"s390x", "m5.large", `no default instance type found for provider "AWS", arch "s390x". Defaulting to the amd64 one: "m5.large"`},
	}
	for _, tc := range tests {
		t.Run(tc.arch, func(t *testing.T) {
			spec := &machinev1beta1.AWSMachineProviderConfig{}
			warnings := defaultAWS(spec, platformEnv{arch: tc.arch})
			if spec.InstanceType != tc.want || !reflect.DeepEqual(warnings, []string{tc.warning}) {
				t.Errorf("instanceType %q, warnings %q; want %q, %q", spec.InstanceType, warnings, tc.want, tc.warning)
			}
		})
	}
}

func TestValidateAWS(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","ami":{"id":"ami-1"},"instanceType":"m5.large",` +
		`"placement":{"region":"us-east-1"},"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"aws-cloud-credentials"},` +
		`"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"worker-profile"}}`
	noSubnet := "providerSpec.subnet: No subnet has been provided. Instances may be created in an unexpected subnet and may not join the cluster."
	noProfile := "providerSpec.iamInstanceProfile: no IAM instance profile provided: nodes may be unable to join the cluster"
	runValidation(t, awsCluster, secretsIn("openshift-machine-api/aws-cloud-credentials"), []validationCase{
		{name: "valid", value: valid},
		{name: "legacy group", value: with(t, valid, `{"apiVersion":"awsproviderconfig.openshift.io/v1beta1"}`)},
		{name: "no value", wantErrs: []string{"providerSpec.value: Required value: a value must be provided"}},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				"providerSpec.ami: Required value: expected providerSpec.ami.id to be populated",
				"providerSpec.placement.region: Required value: expected providerSpec.placement.region to be populated",
				"providerSpec.instanceType: Required value: expected providerSpec.instanceType to be populated",
				"providerSpec.userDataSecret: Required value: expected providerSpec.userDataSecret to be populated",
				"providerSpec.credentialsSecret: Required value: expected providerSpec.credentialsSecret to be populated",
			},
			wantWarnings: []string{"incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind=", noSubnet, noProfile}},
		{name: "AMI by ARN and filters", value: with(t, valid, `{"ami":{"arn":"arn:x","filters":[{"name":"n"}]}}`),
			wantErrs: []string{"providerSpec.ami: Required value: expected providerSpec.ami.id to be populated"},
			wantWarnings: []string{
				"can't use providerSpec.ami.arn, only providerSpec.ami.id can be used to reference AMI",
				"can't use providerSpec.ami.filters, only providerSpec.ami.id can be used to reference AMI",
			}},
		{name: "credentials Secret missing", value: with(t, valid, `{"credentialsSecret":{"name":"other"}}`),
			wantWarnings: []string{`providerSpec.credentialsSecret: Invalid value: "other": not found. Expected CredentialsSecret to exist`}},
		{name: "no subnet, no instance profile", value: with(t, valid, `{"subnet":null,"iamInstanceProfile":null}`),
			wantWarnings: []string{noSubnet, noProfile}},
		{name: "subnet by filters", value: with(t, valid, `{"subnet":{"filters":[{"name":"tag:Name","values":["x"]}]}}`)},
		{name: "tenancy", value: with(t, valid, `{"placement":{"region":"us-east-1","tenancy":"shared"}}`),
			wantErrs: []string{`providerSpec.tenancy: Invalid value: "shared": Invalid providerSpec.tenancy, the only allowed options are: default, dedicated, host`}},
		{name: "duplicated tags", value: with(t, valid, `{"tags":[{"name":"a","value":"1"},{"name":"b"},{"name":"a"},{"name":"a"},{"name":"b"}]}`),
			wantWarnings: []string{"providerSpec.tags: duplicated tag names (a,b): only the first value will be used."}},
		{name: "network interface type", value: with(t, valid, `{"networkInterfaceType":"SRIOV"}`),
			wantErrs: []string{`providerSpec.networkInterfaceType: Invalid value: "SRIOV": Valid values are: ENA, EFA and omitted`}},
		{name: "EFA", value: with(t, valid, `{"networkInterfaceType":"EFA"}`)},
		{name: "metadata service authentication", value: with(t, valid, `{"metadataServiceOptions":{"authentication":"Sometimes"}}`),
			wantErrs: []string{`providerSpec.metadataServiceOptions.authentication: Invalid value: "Sometimes": Allowed values are either 'Optional' or 'Required'`}},
		{name: "unknown field", value: with(t, valid, `{"instanceTyp":"m5.large"}`),
			wantWarnings: []string{`providerSpec.value: Unsupported value: "instanceTyp": Unknown field (instanceTyp) will be ignored`}},
		{name: "unknown version", value: with(t, valid, `{"apiVersion":"machine.openshift.io/v2"}`),
			wantWarnings: []string{"incorrect GroupVersionKind for AWSMachineProviderConfig object: machine.openshift.io/v2, Kind=AWSMachineProviderConfig"}},
	})
}

func TestValidateAWSNotAnObject(t *testing.T) {
	errs, _ := ValidateProviderSpec(value(`[1]`), awsCluster, "ns", "m", nil, nil)
	if len(errs) != 1 || errs[0].Field != "providerSpec.value" || errs[0].Detail != "json: cannot unmarshal array into Go value of type v1beta1.AWSMachineProviderConfig" {
		t.Errorf("errors = %v, want one at providerSpec.value saying it is not an object", errs)
	}
}

// TestAWSThroughHandlers: the handlers read the platform from the
// Infrastructure and the credentials Secret through the Reader.
func TestAWSThroughHandlers(t *testing.T) {
	infra := withStatus(infrastructure(configv1.AWSPlatformType, configv1.AWSPlatformType, "", testInfraName), func(ps *configv1.PlatformStatus) {
		ps.AWS = &configv1.AWSPlatformStatus{Region: "us-east-1"}
	})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-machine-api", Name: "aws-cloud-credentials"}}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "w"}
	ms := machineSet("w", sel, sel, value(`{"ami":{"id":"ami-1"}}`))

	for _, tc := range []struct {
		name    string
		objects []client.Object
		want    []string
	}{
		{"credentials Secret present", []client.Object{infra, secret}, nil},
		{"credentials Secret missing", []client.Object{infra}, []string{`providerSpec.credentialsSecret: Invalid value: "aws-cloud-credentials": not found. Expected CredentialsSecret to exist`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handlers := Handlers(Options{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objects...).Build()})
			resp := handlers[MutateMachineSetPath].Handle(context.Background(), request(t, admissionv1.Create, ms, nil))
			if !resp.Allowed {
				t.Fatalf("defaulting refused: %v", resp.Result)
			}
			b, _ := json.Marshal(ms)
			patched, err := applyPatch(b, sortedPatches(t, resp.Patches))
			if err != nil {
				t.Fatal(err)
			}
			defaulted := &machinev1beta1.MachineSet{}
			if err := json.Unmarshal(patched, defaulted); err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, defaulted.Spec.Template.Spec.ProviderSpec.Value.Raw, `{"ami":{"id":"ami-1"},"instanceType":"`+awsInstanceType()+
				`","placement":{"region":"us-east-1"},"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"aws-cloud-credentials"}}`)

			resp = handlers[ValidateMachineSetPath].Handle(context.Background(), request(t, admissionv1.Create, defaulted, nil))
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			want := append([]string{
				"incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind=",
			}, tc.want...)
			want = append(want,
				"providerSpec.subnet: No subnet has been provided. Instances may be created in an unexpected subnet and may not join the cluster.",
				"providerSpec.iamInstanceProfile: no IAM instance profile provided: nodes may be unable to join the cluster")
			if !reflect.DeepEqual([]string(resp.Warnings), want) {
				t.Errorf("warnings:\n got  %q\n want %q", resp.Warnings, want)
			}
		})
	}
}

// TestValidateAWSMachineUpdate: an error the Machine already had is a
// warning on update; one the update introduces is refused.
func TestValidateAWSMachineUpdate(t *testing.T) {
	noAMI := `{"instanceType":"m5.large","placement":{"region":"us-east-1"},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"aws-cloud-credentials"},"subnet":{"id":"s"},"iamInstanceProfile":{"id":"p"}}`
	old := machine("m", value(noAMI))
	secrets := secretsIn("openshift-machine-api/aws-cloud-credentials")
	gvk := "incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind="
	missingAMI := "providerSpec.ami: Required value: expected providerSpec.ami.id to be populated"

	relabelled := machine("m", value(noAMI), func(m *machinev1beta1.Machine) { m.Labels = map[string]string{"a": "b"} })
	errs, warnings := ValidateMachineUpdate(relabelled, old, awsCluster, secrets)
	wantWarnings := []string{gvk, missingAMI + " (already invalid before this update; fix it)"}
	if len(errs) != 0 || !reflect.DeepEqual([]string(warnings), wantWarnings) {
		t.Errorf("unchanged invalid part: errors %v, warnings %q; want none and %q", errs, warnings, wantWarnings)
	}

	broken := machine("m", value(with(t, noAMI, `{"placement":{"region":"us-east-1","tenancy":"shared"}}`)))
	errs, _ = ValidateMachineUpdate(broken, old, awsCluster, secrets)
	checkErrors(t, errs, `providerSpec.tenancy: Invalid value: "shared"`)
}
