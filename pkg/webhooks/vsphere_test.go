package webhooks

import (
	"testing"
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
	runValidation(t, vsphereCluster, secretsIn("openshift-machine-api/vsphere-cloud-credentials"), []validationCase{
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
		{name: "unnamed Secrets", value: with(t, valid, `{"userDataSecret":{},"credentialsSecret":{}}`),
			wantErrs: []string{
				"providerSpec.userDataSecret.name: Required value: name must be provided",
				"providerSpec.credentialsSecret.name: Required value: name must be provided",
			}},
		{name: "credentials Secret missing", value: with(t, valid, `{"credentialsSecret":{"name":"other"}}`),
			wantWarnings: []string{`providerSpec.credentialsSecret: Invalid value: "other": not found. Expected CredentialsSecret to exist`}},
	})
}
