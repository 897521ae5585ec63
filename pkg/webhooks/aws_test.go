package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"strings"
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
			in:      `{"instanceType":"c5.xlarge","placement":{"availabilityZone":"us-east-1a","rack":7},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"},"custom":true}`,
			want:    `{"instanceType":"c5.xlarge","placement":{"availabilityZone":"us-east-1a","rack":7,"region":"us-east-1"},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"},"custom":true}`,
			wantSet: []string{"placement"}},
		// Breaks if: defaultAWS leaves a user-data reference without a name alone (OCPBUGS-55135).
		{name: "a user-data reference without a name names the default Secret, its other keys stay", cluster: awsCluster,
			in:      `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1"},"userDataSecret":{"name":"","x":1},"credentialsSecret":{"name":"c"}}`,
			want:    `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1"},"userDataSecret":{"name":"worker-user-data","x":1},"credentialsSecret":{"name":"c"}}`,
			wantSet: []string{"userDataSecret"}},
		{name: "an empty user-data reference too", cluster: awsCluster,
			in:      `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1"},"userDataSecret":{},"credentialsSecret":{"name":"c"}}`,
			want:    `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1"},"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"c"}}`,
			wantSet: []string{"userDataSecret"}},
		// As OpenShift: an empty credentials reference is not completed.
		{name: "an empty credentials reference stays", cluster: awsCluster,
			in: `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1"},"userDataSecret":{"name":"u"},"credentialsSecret":{}}`},
		{name: "the new fields are kept as given", cluster: awsCluster,
			in: `{"instanceType":"c5.xlarge","placement":{"region":"eu-west-1","tenancy":"host","host":{"affinity":"AnyAvailable"}},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"},` +
				`"capacityReservationId":"cr-12345678901234567","marketType":"CapacityBlock","cpuOptions":{},"blockDevices":[{"ebs":{"volumeType":"gp2","throughputMib":5}}]}`},
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
			wantErrs: []string{`providerSpec.tenancy: Invalid value: "shared": Invalid providerSpec.tenancy, the only allowed options are: default, dedicated, host, or omitted`}},
		{name: "dedicated tenancy", value: with(t, valid, `{"placement":{"region":"us-east-1","tenancy":"dedicated"}}`)},
		{name: "user data Secret without a name", value: with(t, valid, `{"userDataSecret":{}}`),
			wantErrs: []string{"providerSpec.userDataSecret.name: Required value: expected providerSpec.userDataSecret.name to be provided"}},
		{name: "subnet by ARN", value: with(t, valid, `{"subnet":{"arn":"arn:aws:ec2:subnet/s"}}`),
			wantWarnings: []string{"can't use providerSpec.subnet.arn, only providerSpec.subnet.id or providerSpec.subnet.filters can be used to reference Subnet"}},
		{name: "instance profile by ARN and filters", value: with(t, valid, `{"iamInstanceProfile":{"arn":"arn:p","filters":[{"name":"n"}]}}`),
			wantWarnings: []string{
				"can't use providerSpec.iamInstanceProfile.arn, only providerSpec.iamInstanceProfile.id can be used to reference IAMInstanceProfile",
				"can't use providerSpec.iamInstanceProfile.filters, only providerSpec.iamInstanceProfile.id can be used to reference IAMInstanceProfile",
			}},
		{name: "placement group partition without a group", value: with(t, valid, `{"placementGroupPartition":2}`),
			wantErrs: []string{"providerSpec.placementGroupPartition: Invalid value: 2: providerSpec.placementGroupPartition is set but providerSpec.placementGroupName is empty"}},
		{name: "placement group partition 9", value: with(t, valid, `{"placementGroupName":"pg","placementGroupPartition":9}`),
			wantErrs: []string{"providerSpec.placementGroupPartition: Invalid value: 9: providerSpec.placementGroupPartition must be between 1 and 7"}},
		{name: "placement group partition 0 without a group", value: with(t, valid, `{"placementGroupPartition":0}`),
			wantErrs: []string{
				"providerSpec.placementGroupPartition: Invalid value: 0: providerSpec.placementGroupPartition must be between 1 and 7",
				"providerSpec.placementGroupPartition: Invalid value: 0: providerSpec.placementGroupPartition is set but providerSpec.placementGroupName is empty",
			}},
		{name: "placement group partitions 1 and 7", value: with(t, valid, `{"placementGroupName":"pg","placementGroupPartition":7}`)},
		{name: "placement group alone", value: with(t, valid, `{"placementGroupName":"pg"}`)},
		{name: "empty cpuOptions", value: with(t, valid, `{"cpuOptions":{}}`),
			wantErrs: []string{`providerSpec.CPUOptions: Invalid value: "{}": At least one field must be set if cpuOptions is provided`}},
		{name: "confidential compute AMD SEV-SNP", value: with(t, valid, `{"cpuOptions":{"confidentialCompute":"AMDEncryptedVirtualizationNestedPaging"}}`)},
		{name: "confidential compute disabled", value: with(t, valid, `{"cpuOptions":{"confidentialCompute":"Disabled"}}`)},
		{name: "confidential compute unknown", value: with(t, valid, `{"cpuOptions":{"confidentialCompute":"invalid"}}`),
			wantErrs: []string{`providerSpec.CPUOptions.ConfidentialCompute: Invalid value: "invalid": Allowed values are Disabled, AMDEncryptedVirtualizationNestedPaging and omitted`}},
		{name: "confidential compute empty", value: with(t, valid, `{"cpuOptions":{"confidentialCompute":""}}`),
			wantErrs: []string{`providerSpec.CPUOptions.ConfidentialCompute: Invalid value: "": Allowed values are Disabled, AMDEncryptedVirtualizationNestedPaging and omitted`}},
		{name: "duplicated tags", value: with(t, valid, `{"tags":[{"name":"a","value":"1"},{"name":"b"},{"name":"a"},{"name":"a"},{"name":"b"}]}`),
			wantWarnings: []string{"providerSpec.tags: duplicated tag names (a,b): only the first value will be used."}},
		{name: "network interface type", value: with(t, valid, `{"networkInterfaceType":"SRIOV"}`),
			wantErrs: []string{`providerSpec.networkInterfaceType: Invalid value: "SRIOV": Valid values are: ENA, EFA and omitted`}},
		{name: "EFA", value: with(t, valid, `{"networkInterfaceType":"EFA"}`)},
		{name: "metadata service authentication", value: with(t, valid, `{"metadataServiceOptions":{"authentication":"Sometimes"}}`),
			wantErrs: []string{`providerSpec.metadataServiceOptions.authentication: Invalid value: "Sometimes": Allowed values are either 'Optional' or 'Required'`}},
		// As OpenShift's decoder (through YAML). Breaks if: decodeValue uses encoding/json.
		{name: "a number for a string, then an unknown field", value: with(t, valid, `{"instanceType":5,"zz":1}`),
			wantWarnings: []string{`providerSpec.value: Unsupported value: "zz": Unknown field (zz) will be ignored`}},
		{name: "unknown field", value: with(t, valid, `{"instanceTyp":"m5.large"}`),
			wantWarnings: []string{`providerSpec.value: Unsupported value: "instanceTyp": Unknown field (instanceTyp) will be ignored`}},
		{name: "unknown version", value: with(t, valid, `{"apiVersion":"machine.openshift.io/v2"}`),
			wantWarnings: []string{"incorrect GroupVersionKind for AWSMachineProviderConfig object: machine.openshift.io/v2, Kind=AWSMachineProviderConfig"}},
	})
}

// TestValidateAWSMarket: capacity reservations and market types, with OpenShift's texts.
func TestValidateAWSMarket(t *testing.T) {
	valid := `{"ami":{"id":"ami-1"},"instanceType":"m5.large","placement":{"region":"us-east-1"},"userDataSecret":{"name":"u"},` +
		`"credentialsSecret":{"name":"c"},"subnet":{"id":"s"},"iamInstanceProfile":{"id":"p"}}`
	const reservation = "cr-12345678901234567"
	badID := func(id string) string {
		return `providerSpec.capacityReservationId: Invalid value: "` + id + `": invalid value for capacityReservationId: "` + id +
			`", it must start with 'cr-' and be exactly 20 characters long with 17 hexadecimal characters`
	}
	gvk := "incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind="
	var cases []validationCase
	for _, tc := range []struct {
		name, patch string
		wantErrs    []string
	}{
		{"a capacity reservation", `{"capacityReservationId":"` + reservation + `"}`, nil},
		{"an empty capacity reservation", `{"capacityReservationId":""}`, nil},
		{"capacity reservation fooobaar", `{"capacityReservationId":"fooobaar"}`, []string{badID("fooobaar")}},
		{"a short capacity reservation", `{"capacityReservationId":"cr-123"}`, []string{badID("cr-123")}},
		{"capacity reservation in upper case", `{"capacityReservationId":"cr-1234567890ABCDEF0"}`, []string{badID("cr-1234567890ABCDEF0")}},
		{"marketType Bogus", `{"marketType":"Bogus"}`,
			[]string{`providerSpec.marketType: Invalid value: "Bogus": invalid marketType: Bogus valid values are: OnDemand, Spot, CapacityBlock and omitted`}},
		{"marketType OnDemand", `{"marketType":"OnDemand"}`, nil},
		{"marketType Spot with spot options", `{"marketType":"Spot","spotMarketOptions":{}}`, nil},
		{"marketType Spot with a capacity reservation", `{"marketType":"Spot","capacityReservationId":"` + reservation + `"}`,
			[]string{`providerSpec.marketType: Invalid value: "Spot": invalid marketType: marketType set to Spot and capacityReservationID may not be used together`}},
		// Breaks if: the spot options rule ignores marketType (OpenShift reports the marketType only).
		{"marketType Spot with spot options and a capacity reservation", `{"marketType":"Spot","spotMarketOptions":{},"capacityReservationId":"` + reservation + `"}`,
			[]string{`providerSpec.marketType: Invalid value: "Spot": invalid marketType: marketType set to Spot and capacityReservationID may not be used together`}},
		{"spot options with a capacity reservation", `{"spotMarketOptions":{"maxPrice":"0.1"},"capacityReservationId":"` + reservation + `"}`,
			[]string{`providerSpec.capacityReservationId: Invalid value: "` + reservation + `": spotMarketOptions and capacityReservationID may not be used together`}},
		{"spot options with a bad capacity reservation", `{"spotMarketOptions":{},"capacityReservationId":"cr-1"}`,
			[]string{badID("cr-1"), `providerSpec.capacityReservationId: Invalid value: "cr-1": spotMarketOptions and capacityReservationID may not be used together`}},
		{"marketType CapacityBlock with spot options", `{"marketType":"CapacityBlock","spotMarketOptions":{},"capacityReservationId":"` + reservation + `"}`,
			[]string{`providerSpec.marketType: Invalid value: "CapacityBlock": invalid marketType: marketType set to CapacityBlock and spotMarketOptions cannot be used together`}},
		{"marketType OnDemand with spot options", `{"marketType":"OnDemand","spotMarketOptions":{}}`,
			[]string{`providerSpec.marketType: Invalid value: "OnDemand": invalid marketType: setting marketType to OnDemand and spotMarketOptions cannot be used together`}},
		{"marketType CapacityBlock without a capacity reservation", `{"marketType":"CapacityBlock"}`,
			[]string{`providerSpec.marketType: Invalid value: "CapacityBlock": capacityReservationID is required when CapacityBlock is provided`}},
		{"marketType CapacityBlock with a capacity reservation", `{"marketType":"CapacityBlock","capacityReservationId":"` + reservation + `"}`, nil},
		{"marketType CapacityBlock with a bad capacity reservation", `{"marketType":"CapacityBlock","capacityReservationId":"fooobaar"}`,
			[]string{badID("fooobaar")}},
	} {
		cases = append(cases, validationCase{name: tc.name, value: with(t, valid, tc.patch), wantErrs: tc.wantErrs, wantWarnings: []string{gvk}})
	}
	runValidation(t, awsCluster, nil, cases)
}

// TestValidateAWSThroughput: an EBS throughput only on gp3, 125 to 2000 MiB/s, with OpenShift's texts.
func TestValidateAWSThroughput(t *testing.T) {
	valid := `{"ami":{"id":"ami-1"},"instanceType":"m5.large","placement":{"region":"us-east-1"},"userDataSecret":{"name":"u"},` +
		`"credentialsSecret":{"name":"c"},"subnet":{"id":"s"},"iamInstanceProfile":{"id":"p"}}`
	gvk := "incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind="
	var cases []validationCase
	for _, tc := range []struct {
		name, devices string
		wantErrs      []string
	}{
		{"gp3 at 1000", `[{"ebs":{"volumeType":"gp3","throughputMib":1000}}]`, nil},
		{"gp3 at 125 and 2000", `[{"ebs":{"volumeType":"gp3","throughputMib":125}},{"ebs":{"volumeType":"gp3","throughputMib":2000}}]`, nil},
		{"gp3 at 124", `[{"ebs":{"volumeType":"gp3","throughputMib":124}}]`,
			[]string{"providerSpec.blockDevices[0].ebs.throughputMib: Invalid value: 124: must be a value between 125 and 2000"}},
		{"gp3 at 2001", `[{"ebs":{"volumeType":"gp3","throughputMib":2001}}]`,
			[]string{"providerSpec.blockDevices[0].ebs.throughputMib: Invalid value: 2001: must be a value between 125 and 2000"}},
		{"throughput on a gp2 volume", `[{"ebs":{"volumeType":"gp3"}},{"ebs":{"volumeType":"gp2","throughputMib":500}}]`,
			[]string{"providerSpec.blockDevices[1].ebs.throughputMib: Invalid value: 500: only valid for gp3 volumes"}},
		{"throughput on an io1 volume", `[{"ebs":{"volumeType":"io1","throughputMib":124}}]`,
			[]string{"providerSpec.blockDevices[0].ebs.throughputMib: Invalid value: 124: only valid for gp3 volumes"}},
		// As OpenShift: without a volume type nothing is checked.
		{"throughput without a volume type", `[{"ebs":{"throughputMib":5}},{"deviceName":"/dev/xvdb"}]`, nil},
	} {
		cases = append(cases, validationCase{name: tc.name, value: with(t, valid, `{"blockDevices":`+tc.devices+`}`), wantErrs: tc.wantErrs, wantWarnings: []string{gvk}})
	}
	runValidation(t, awsCluster, nil, cases)
}

// TestValidateAWSHostPlacement: tenancy, dedicated hosts and dynamic host allocation, with OpenShift's texts and paths.
func TestValidateAWSHostPlacement(t *testing.T) {
	valid := `{"ami":{"id":"ami-1"},"instanceType":"m5.large","userDataSecret":{"name":"u"},` +
		`"credentialsSecret":{"name":"c"},"subnet":{"id":"s"},"iamInstanceProfile":{"id":"p"}}`
	gvk := "incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind="
	const (
		idRequired = "spec.placement.host.dedicatedHost.id: Required value: id is required when allocationStrategy is UserProvided and must start with 'h-' followed by 8 or 17 lowercase hexadecimal characters (0-9 and a-f)"
		dynamicAny = "spec.placement.host.affinity: Forbidden: hostAffinity must be DedicatedHost when using dynamic host allocation"
		hostOnly   = "spec.placement.host: Forbidden: host may only be specified when tenancy is 'host'"
	)
	badID := func(id string) string {
		return `spec.placement.host.dedicatedHost.id: Invalid value: "` + id + `": id must start with 'h-' followed by 8 or 17 lowercase hexadecimal characters (0-9 and a-f)`
	}
	tags := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name":"tag%d","value":"v"}`, i)
		}
		return "[" + b.String() + "]"
	}
	var cases []validationCase
	for _, tc := range []struct {
		name, tenancy, host string // host: the placement.host JSON ("" none)
		wantErrs            []string
	}{
		{"host tenancy without a host placement", "host", "", nil},
		{"any available host", "host", `{"affinity":"AnyAvailable"}`, nil},
		{"any available host, with a host ID", "host", `{"affinity":"AnyAvailable","dedicatedHost":{"id":"h-1234567890abcdef0"}}`, nil},
		{"any available host, with an 8-character host ID", "host", `{"affinity":"AnyAvailable","dedicatedHost":{"id":"h-1234abcd"}}`, nil},
		{"any available host, dedicated host without ID", "host", `{"affinity":"AnyAvailable","dedicatedHost":{}}`, []string{idRequired}},
		{"any available host, invalid host ID", "host", `{"affinity":"AnyAvailable","dedicatedHost":{"id":"invalid"}}`, []string{badID("invalid")}},
		{"no affinity", "host", `{}`,
			[]string{"spec.placement.host.affinity: Required value: affinity is required and must be set to either AnyAvailable or DedicatedHost"}},
		{"invalid affinity", "host", `{"affinity":"invalid"}`,
			[]string{`spec.placement.host.affinity: Invalid value: "invalid": hostAffinity must be either AnyAvailable or DedicatedHost`}},
		{"a dedicated host", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-1234567890abcdef0"}}`, nil},
		{"a dedicated host, user provided", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"UserProvided","id":"h-1234abcd"}}`, nil},
		{"dedicated host affinity without a host", "host", `{"affinity":"DedicatedHost"}`,
			[]string{"spec.placement.host.dedicatedHost: Required value: dedicatedHost is required when hostAffinity is DedicatedHost, and optional otherwise"}},
		{"a dedicated host with an empty ID", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"id":""}}`, []string{idRequired}},
		{"a dedicated host, 9 characters", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-123456789"}}`, []string{badID("h-123456789")}},
		{"a dedicated host, 16 characters", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-1234567890abcdef"}}`, []string{badID("h-1234567890abcdef")}},
		{"a dedicated host in upper case", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-1234ABCD"}}`, []string{badID("h-1234ABCD")}},
		{"user provided with dynamic allocation", "host",
			`{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"UserProvided","id":"h-1234567890abcdef0","dynamicHostAllocation":{"tags":[{"name":"k","value":"v"}]}}}`,
			[]string{`spec.placement.host.dedicatedHost.dynamicHostAllocation: Invalid value: "h-1234567890abcdef0": dynamicHostAllocation is only allowed when allocationStrategy is Dynamic`}},
		{"dynamic", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic"}}`, nil},
		{"dynamic with tags", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic","dynamicHostAllocation":{"tags":` + tags(50) + `}}}`, nil},
		{"dynamic with an ID", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic","id":"h-1234567890abcdef0"}}`,
			[]string{"spec.placement.host.dedicatedHost.id: Forbidden: id is only allowed when allocationStrategy is Provided"}},
		{"dynamic allocation without tags", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic","dynamicHostAllocation":{}}}`,
			[]string{"spec.placement.host.dedicatedHost.dynamicHostAllocation.tags: Required value: at least one property must be specified in dynamicHostAllocation"}},
		{"dynamic allocation with no tag", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic","dynamicHostAllocation":{"tags":[]}}}`,
			[]string{"spec.placement.host.dedicatedHost.dynamicHostAllocation.tags: Invalid value: 0: at least 1 tag must be specified"}},
		{"dynamic allocation with 51 tags", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"Dynamic","dynamicHostAllocation":{"tags":` + tags(51) + `}}}`,
			[]string{"spec.placement.host.dedicatedHost.dynamicHostAllocation.tags: Invalid value: 51: maximum 50 tags can be specified"}},
		{"an unknown allocation strategy", "host", `{"affinity":"DedicatedHost","dedicatedHost":{"allocationStrategy":"invalid"}}`,
			[]string{`spec.placement.host.dedicatedHost.allocationStrategy: Invalid value: "invalid": Invalid allocationStrategy, the only allowed options are: UserProvided, Dynamic`}},
		{"any available host, dynamic", "host", `{"affinity":"AnyAvailable","dedicatedHost":{"allocationStrategy":"Dynamic"}}`, []string{dynamicAny}},
		{"any available host, dynamic with tags", "host",
			`{"affinity":"AnyAvailable","dedicatedHost":{"allocationStrategy":"Dynamic","dynamicHostAllocation":{"tags":[{"name":"env","value":"test"}]}}}`, []string{dynamicAny}},
		{"any available host, dynamic with an ID", "host", `{"affinity":"AnyAvailable","dedicatedHost":{"allocationStrategy":"Dynamic","id":"h-1234abcd"}}`,
			[]string{dynamicAny, "spec.placement.host.dedicatedHost.id: Forbidden: id is only allowed when allocationStrategy is Provided"}},
		// Breaks if: the host placement is checked with any tenancy.
		{"a host placement with dedicated tenancy", "dedicated", `{"affinity":"AnyAvailable"}`, []string{hostOnly}},
		{"a host placement with default tenancy", "default", `{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-1234abcd"}}`, []string{hostOnly}},
		{"a host placement without tenancy", "", `{"affinity":"AnyAvailable"}`, []string{hostOnly}},
	} {
		placement := map[string]any{"region": "us-east-1"}
		if tc.tenancy != "" {
			placement["tenancy"] = tc.tenancy
		}
		if tc.host != "" {
			placement["host"] = json.RawMessage(tc.host)
		}
		p, err := json.Marshal(map[string]any{"placement": placement})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, validationCase{name: tc.name, value: with(t, valid, string(p)), wantErrs: tc.wantErrs, wantWarnings: []string{gvk}})
	}
	runValidation(t, awsCluster, nil, cases)
}

// TestValidateAWSControlPlaneHost: as OpenShift, a Machine labelled master (role or type) may not use host
// tenancy; a MachineSet's template is checked without its labels, so such a set is admitted.
func TestValidateAWSControlPlaneHost(t *testing.T) {
	ps := value(`{"ami":{"id":"ami-1"},"instanceType":"m5.large","placement":{"region":"us-east-1","tenancy":"host",` +
		`"host":{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-1234567890abcdef0"}}},` +
		`"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"},"subnet":{"id":"s"},"iamInstanceProfile":{"id":"p"}}`)
	const refused = "spec.placement.tenancy: Forbidden: dedicated host tenancy is not supported for control plane machines"
	labelled := func(labels map[string]string) func(*machinev1beta1.Machine) {
		return func(m *machinev1beta1.Machine) { m.Labels = labels }
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"a worker", map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker"}, nil},
		{"no labels", nil, nil},
		{"role master", map[string]string{"machine.openshift.io/cluster-api-machine-role": "master"}, []string{refused}},
		// Breaks if: only the role label is read.
		{"type master", map[string]string{"machine.openshift.io/cluster-api-machine-type": "master"}, []string{refused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := ValidateMachine(machine("m", ps, labelled(tc.labels)), awsCluster, nil)
			checkErrors(t, errs, tc.want...)
		})
	}
	t.Run("a MachineSet of control plane Machines", func(t *testing.T) {
		master := map[string]string{"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machineset": "cp"}
		errs, _ := ValidateMachineSet(machineSet("cp", master, master, ps), awsCluster, nil)
		checkErrors(t, errs)
	})
}

func TestValidateAWSNotAnObject(t *testing.T) {
	errs, _ := ValidateProviderSpec(value(`[1]`), awsCluster, "ns", "m", nil, nil)
	if len(errs) != 1 || errs[0].Field != "providerSpec.value" || errs[0].Detail != "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type v1beta1.AWSMachineProviderConfig" {
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
