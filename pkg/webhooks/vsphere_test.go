package webhooks

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

var vsphereCluster = ClusterInfo{Provider: ProviderVSphere, InfrastructureName: testInfraName}

func TestDefaultVSphere(t *testing.T) {
	runDefaulting(t, []defaultingCase{
		{name: "the Secrets are filled in", cluster: vsphereCluster, in: `{"template":"rhcos","numCPUs":4}`,
			want:    `{"template":"rhcos","numCPUs":4,"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"vsphere-cloud-credentials"}}`,
			wantSet: []string{"credentialsSecret", "userDataSecret"}},
		{name: "given Secrets are kept", cluster: vsphereCluster, in: `{"userDataSecret":{"name":"u"},"credentialsSecret":{}}`},
		{name: "a vSphere value on a GCP cluster", cluster: gcpCluster, in: `{"kind":"VSphereMachineProviderSpec"}`},
	})
}

func TestValidateVSphere(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","template":"rhcos","numCPUs":4,"memoryMiB":16384,"diskGiB":120,` +
		`"workspace":{"server":"vcenter.example.com","datacenter":"dc","folder":"/dc/vm/cluster","datastore":"ds"},"network":{"devices":[{"networkName":"vm-network"}]},` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"vsphere-cloud-credentials"}}`
	tag := "urn:vmomi:InventoryServiceTag:5736bf56-49f5-4667-b38c-b97e09dc9578:GLOBAL"
	runValidation(t, vsphereCluster, secretsIn("openshift-machine-api/vsphere-cloud-credentials"), append([]validationCase{
		{name: "valid", value: valid},
		{name: "legacy group", value: with(t, valid, `{"apiVersion":"vsphereprovider.openshift.io/v1beta1"}`)},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				"providerSpec.template: Required value: template must be provided",
				"providerSpec.workspace: Required value: workspace must be provided",
				"providerSpec.network.devices: Required value: at least 1 network device must be provided",
				"providerSpec.userDataSecret: Required value: userDataSecret must be provided",
				"providerSpec.credentialsSecret: Required value: credentialsSecret must be provided",
			},
			wantWarnings: []string{
				"incorrect GroupVersionKind for VSphereMachineProviderSpec object: /, Kind=",
				"providerSpec.numCPUs: 0 is missing or less than the minimum value (2): nodes may not boot correctly",
				"providerSpec.memoryMiB: 0 is missing or less than the recommended minimum value (2048): nodes may not boot correctly",
				"providerSpec.diskGiB: 0 is missing or less than the recommended minimum (120): nodes may fail to start if disk size is too low",
			}},
		{name: "workspace without server and datacenter, relative folder", value: with(t, valid, `{"workspace":{"folder":"cluster"}}`),
			wantErrs: []string{
				"providerSpec.workspace.server: Required value: server must be provided",
				`providerSpec.workspace.folder: Invalid value: "cluster": folder must be absolute path: expected prefix "//vm/"`,
			},
			wantWarnings: []string{"providerSpec.workspace.datacenter: datacenter is unset: if more than one datacenter is present, VMs cannot be created"}},
		{name: "network device without name", value: with(t, valid, `{"network":{"devices":[{"networkName":"a"},{}]}}`),
			wantErrs: []string{"providerSpec.network.devices[1].networkName: Required value: networkName must be provided"}},
		{name: "linked clone with a disk size", value: with(t, valid, `{"cloneMode":"linkedClone"}`),
			wantWarnings: []string{"linkedClone clone mode is set. DiskGiB parameter will be ignored, disk size from template will be used."}},
		{name: "tags", value: with(t, valid, `{"tagIDs":["`+tag+`","urn:vmomi:InventoryServiceTag:nope:GLOBAL"]}`),
			wantErrs: []string{"providerSpec.tagIDs: Required value: tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL"}},
		{name: "too many tags", value: with(t, valid, `{"tagIDs":["`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`","`+tag+`"]}`),
			wantErrs: []string{`providerSpec.tagIDs: Invalid value: ["` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `","` + tag + `"]: a maximum of 10 tags are allowed`}},
		// Breaks if: more than 10 network devices are accepted, or each is still checked (OpenShift reports the count alone).
		{name: "eleven network devices", value: with(t, valid, `{"network":{"devices":[{},{},{},{},{},{},{},{},{},{},{}]}}`),
			wantErrs: []string{"providerSpec.network.devices: Too many: 11: must have at most 10 items"}},
		{name: "ten network devices", value: with(t, valid, `{"network":{"devices":[`+strings.Repeat(`{"networkName":"n"},`, 9)+`{"networkName":"n"}]}}`)},
		// Breaks if: vmGroup is accepted without the VSphereHostVMGroupZonal gate.
		{name: "vmGroup without the gate", value: with(t, valid, `{"workspace":{"server":"vcenter.example.com","datacenter":"dc","vmGroup":"zone-a"}}`),
			wantErrs: []string{`providerSpec.workspace.vmGroup: Invalid value: "zone-a": feature gate VSphereHostVMGroupZonal must be enabled to use vmGroup`}},
		{name: "data disks", value: with(t, valid, `{"dataDisks":[{"name":"images","sizeGiB":100,"provisioningMode":"Thin"},{"name":"logs_1","sizeGiB":16384,"provisioningMode":"EagerlyZeroed"}]}`)},
		// Breaks if: data disks are not checked, or reported at dataDisks (OpenShift's path is providerSpec.disks).
		{name: "bad data disks", value: with(t, valid, `{"dataDisks":[{},{"name":"-x","sizeGiB":16385,"provisioningMode":"Lazy"},{"name":"`+strings.Repeat("d", 81)+`","sizeGiB":1}]}`),
			wantErrs: []string{
				"providerSpec.disks[0].name: Required value: data disk name must be set",
				"providerSpec.disks[0].sizeGiB: Required value: data disk size must be set",
				`providerSpec.disks[1].name: Invalid value: "-x": data disk name must consist only of alphanumeric characters, hyphens and underscores, and must start and end with an alphanumeric character.`,
				"providerSpec.disks[1].sizeGiB: Invalid value: 16385: data disk size (GiB) must not exceed 16384",
				`providerSpec.disks[1]: Unsupported value: "Lazy": supported values: "EagerlyZeroed", "Thick", "Thin"`,
				"providerSpec.disks[2].name: Invalid value: 81: data disk name must not exceed 80",
			}},
		// Breaks if: the count limit is not 29.
		{name: "thirty data disks", value: with(t, valid, `{"dataDisks":[`+strings.TrimSuffix(strings.Repeat(`{"name":"d","sizeGiB":1},`, 30), ",")+`]}`),
			wantErrs: []string{"providerSpec.disks: Invalid value: 30: data disk count must not exceed 29"}},
	}, secretCases(t, valid)...))
}

// TestValidateVSphereVMGroupGated: with the VSphereHostVMGroupZonal gate a vmGroup
// is allowed up to 80 characters.
func TestValidateVSphereVMGroupGated(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","template":"rhcos","numCPUs":4,"memoryMiB":16384,"diskGiB":120,` +
		`"workspace":{"server":"vcenter.example.com","datacenter":"dc","vmGroup":"zone-a"},"network":{"devices":[{"networkName":"vm-network"}]},` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"vsphere-cloud-credentials"}}`
	gated := vsphereCluster
	gated.VSphereHostVMGroupZonal = true
	long := strings.Repeat("g", 81)
	runValidation(t, gated, secretsIn("openshift-machine-api/vsphere-cloud-credentials"), []validationCase{
		// Breaks if: the gate is not read (vmGroup refused although enabled).
		{name: "vmGroup with the gate", value: valid},
		{name: "80 characters", value: with(t, valid, `{"workspace":{"server":"vcenter.example.com","datacenter":"dc","vmGroup":"`+strings.Repeat("g", 80)+`"}}`)},
		// Breaks if: the length limit is not checked with the gate.
		{name: "81 characters", value: with(t, valid, `{"workspace":{"server":"vcenter.example.com","datacenter":"dc","vmGroup":"`+long+`"}}`),
			wantErrs: []string{`providerSpec.workspace.vmGroup: Invalid value: "` + long + `": vmGroup must be less than 80 characters in length`}},
	})
}

// TestVSphereVMGroupThroughHandlers: Options.VSphereHostVMGroupZonal (the
// machineset-controller's --feature-gates) reaches the vSphere rules.
// Breaks if: the handlers do not copy the gate into the ClusterInfo.
func TestVSphereVMGroupThroughHandlers(t *testing.T) {
	infra := infrastructure(configv1.VSpherePlatformType, configv1.VSpherePlatformType, "", testInfraName)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-machine-api", Name: "vsphere-cloud-credentials"}}
	m := machine("m", value(`{"apiVersion":"machine.openshift.io/v1beta1","kind":"VSphereMachineProviderSpec","template":"rhcos","numCPUs":4,"memoryMiB":16384,"diskGiB":120,`+
		`"workspace":{"server":"vcenter.example.com","datacenter":"dc","vmGroup":"zone-a"},"network":{"devices":[{"networkName":"vm-network"}]},`+
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"vsphere-cloud-credentials"}}`))
	for _, gate := range []bool{true, false} {
		reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(infra, secret).Build()
		resp := Handlers(Options{Reader: reader, VSphereHostVMGroupZonal: gate})[ValidateMachinePath].Handle(context.Background(), request(t, admissionv1.Create, m, nil))
		if resp.Allowed != gate {
			t.Errorf("gate %v: allowed %v (%v), want %v", gate, resp.Allowed, resp.Result, gate)
		}
	}
}
