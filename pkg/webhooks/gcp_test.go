package webhooks

import (
	"reflect"
	"runtime"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

var gcpCluster = ClusterInfo{Provider: ProviderGCP, InfrastructureName: testInfraName}

// gcpDefaults are the machine type and boot image OpenShift defaults on this
// machine's architecture.
func gcpDefaults() (machineType, image string) {
	if runtime.GOARCH == "arm64" {
		return "t2a-standard-4", "projects/rhcos-cloud/global/images/rhcos-414-92-202307070025-0-gcp-aarch64"
	}
	return "n1-standard-4", "projects/rhcos-cloud/global/images/rhcos-414-92-202307070025-0-gcp-x86-64"
}

func TestDefaultGCP(t *testing.T) {
	machineType, image := gcpDefaults()
	filled := `"machineType":"` + machineType + `","networkInterfaces":[{"network":"test-x7k2p-network","subnetwork":"test-x7k2p-worker-subnet"}],` +
		`"disks":[{"autoDelete":true,"boot":true,"sizeGb":128,"type":"pd-standard","image":"` + image + `","labels":null}],` +
		`"tags":["test-x7k2p-worker"],"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"gcp-cloud-credentials"}`
	runDefaulting(t, []defaultingCase{
		{name: "only region and zone: the rest is filled in", cluster: gcpCluster, in: `{"region":"us-central1","zone":"us-central1-a"}`,
			want:    `{"region":"us-central1","zone":"us-central1-a",` + filled + `}`,
			wantSet: []string{"credentialsSecret", "disks", "machineType", "networkInterfaces", "tags", "userDataSecret"}},
		// Breaks if: the image is defaulted on every disk (OpenShift's older behaviour), not the boot disk only.
		{name: "given disks get a type, the boot disk the image; a GPU count of 1", cluster: gcpCluster,
			in: `{"machineType":"n2-standard-8","networkInterfaces":[{"network":"n","subnetwork":"s"}],"disks":[{"boot":true,"sizeGb":64},{"type":"pd-ssd","image":"i"},{"sizeGb":32}],` +
				`"gpus":[{"type":"nvidia-tesla-t4"}],"tags":["t"],"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`,
			want: `{"machineType":"n2-standard-8","networkInterfaces":[{"network":"n","subnetwork":"s"}],` +
				`"disks":[{"autoDelete":false,"boot":true,"sizeGb":64,"type":"pd-standard","image":"` + image + `","labels":null},{"autoDelete":false,"boot":false,"sizeGb":0,"type":"pd-ssd","image":"i","labels":null},` +
				`{"autoDelete":false,"boot":false,"sizeGb":32,"type":"pd-standard","image":"","labels":null}],` +
				`"gpus":[{"count":1,"type":"nvidia-tesla-t4"}],"tags":["t"],"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c"}}`,
			wantSet: []string{"disks", "gpus"}},
		{name: "a GCP value on an Azure cluster", cluster: azureCluster, in: `{"kind":"GCPMachineProviderSpec"}`},
	})
}

func TestDefaultGCPByArch(t *testing.T) {
	spec := &machinev1beta1.GCPMachineProviderSpec{}
	warnings := defaultGCP(spec, platformEnv{arch: "arm64"})
	if spec.MachineType != "t2a-standard-4" || spec.Disks[0].Image != "projects/rhcos-cloud/global/images/rhcos-414-92-202307070025-0-gcp-aarch64" {
		t.Errorf("machineType %q, image %q", spec.MachineType, spec.Disks[0].Image)
	}
	want := []string{`setting the default instance type "t2a-standard-4" for cloud provider "GCP", based on the control plane architecture ("arm64")`}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

func TestValidateGCP(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"GCPMachineProviderSpec","region":"us-central1","zone":"us-central1-a","machineType":"n1-standard-4",` +
		`"networkInterfaces":[{"network":"n","subnetwork":"s"}],"disks":[{"boot":true,"sizeGb":128,"type":"pd-ssd","image":"i"}],` +
		`"serviceAccounts":[{"email":"w@p.iam.gserviceaccount.com","scopes":["https://www.googleapis.com/auth/cloud-platform"]}],` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"gcp-cloud-credentials"}}`
	noServiceAccount := "providerSpec.serviceAccounts: no service account provided: nodes may be unable to join the cluster"
	runValidation(t, gcpCluster, secretsIn("openshift-machine-api/gcp-cloud-credentials"), append([]validationCase{
		{name: "valid", value: valid},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				"providerSpec.region: Required value: region is required",
				"providerSpec.machineType: Required value: machineType should be set to one of the supported GCP machine types",
				"providerSpec.networkInterfaces: Required value: at least 1 network interface is required",
				"providerSpec.disks: Required value: at least 1 disk is required",
				"providerSpec.userDataSecret: Required value: userDataSecret must be provided",
				"providerSpec.credentialsSecret: Required value: credentialsSecret must be provided",
			},
			wantWarnings: []string{"incorrect GroupVersionKind for GCPMachineProviderSpec object: /, Kind=", noServiceAccount}},
		{name: "zone in another region", value: with(t, valid, `{"zone":"europe-west1-b"}`),
			wantErrs: []string{`providerSpec.zone: Invalid value: "europe-west1-b": zone not in configured region (us-central1)`}},
		{name: "host maintenance and restart policy", value: with(t, valid, `{"onHostMaintenance":"Reboot","restartPolicy":"Sometimes"}`),
			wantErrs: []string{
				`providerSpec.onHostMaintenance: Invalid value: "Reboot": onHostMaintenance must be either Migrate or Terminate.`,
				`providerSpec.restartPolicy: Invalid value: "Sometimes": restartPolicy must be either Never or Always.`,
			}},
		{name: "shielded instance", value: with(t, valid, `{"shieldedInstanceConfig":{"secureBoot":"On","virtualizedTrustedPlatformModule":"Disabled"}}`),
			wantErrs: []string{
				`providerSpec.shieldedInstanceConfig.secureBoot: Invalid value: "On": secureBoot must be either Enabled or Disabled.`,
				`providerSpec.shieldedInstanceConfig.virtualizedTrustedPlatformModule: Invalid value: "Disabled": integrityMonitoring requires virtualizedTrustedPlatformModule Enabled.`,
			}},
		// Breaks if: the host maintenance check is skipped for a technology value, or the series list loses c3d.
		{name: "confidential compute on an n1 machine migrating", value: with(t, valid, `{"confidentialCompute":"Enabled","onHostMaintenance":"Migrate"}`),
			wantErrs: []string{
				`providerSpec.onHostMaintenance: Invalid value: "Migrate": ConfidentialCompute Enabled requires OnHostMaintenance to be set to Terminate, the current value is: Migrate`,
				`providerSpec.machineType: Invalid value: "n1-standard-4": ConfidentialCompute Enabled requires a machine type in the following series: n2d,c2d,c3d`,
			}},
		{name: "confidential compute on n2d", value: with(t, valid, `{"confidentialCompute":"Enabled","onHostMaintenance":"Terminate","machineType":"n2d-standard-4"}`)},
		{name: "AMD SEV on c3d", value: with(t, valid, `{"confidentialCompute":"AMDEncryptedVirtualization","onHostMaintenance":"Terminate","machineType":"c3d-standard-4"}`)},
		// Breaks if: SEV-SNP accepts the SEV series.
		{name: "AMD SEV-SNP on c2d", value: with(t, valid, `{"confidentialCompute":"AMDEncryptedVirtualizationNestedPaging","onHostMaintenance":"Terminate","machineType":"c2d-standard-4"}`),
			wantErrs: []string{`providerSpec.machineType: Invalid value: "c2d-standard-4": ConfidentialCompute AMDEncryptedVirtualizationNestedPaging requires a machine type in the following series: n2d`}},
		{name: "Intel TDX on c3", value: with(t, valid, `{"confidentialCompute":"IntelTrustedDomainExtensions","onHostMaintenance":"Terminate","machineType":"c3-standard-4"}`)},
		{name: "Intel TDX on n2d", value: with(t, valid, `{"confidentialCompute":"IntelTrustedDomainExtensions","onHostMaintenance":"Terminate","machineType":"n2d-standard-4"}`),
			wantErrs: []string{`providerSpec.machineType: Invalid value: "n2d-standard-4": ConfidentialCompute IntelTrustedDomainExtensions requires a machine type in the following series: c3`}},
		// Breaks if: an unknown value skips the host maintenance check (OpenShift reports both).
		{name: "confidential compute value", value: with(t, valid, `{"confidentialCompute":"Sometimes"}`),
			wantErrs: []string{
				`providerSpec.onHostMaintenance: Invalid value: "": ConfidentialCompute Sometimes requires OnHostMaintenance to be set to Terminate, the current value is: `,
				`providerSpec.confidentialCompute: Invalid value: "Sometimes": ConfidentialCompute must be Enabled, Disabled, AMDEncryptedVirtualization, AMDEncryptedVirtualizationNestedPaging, or IntelTrustedDomainExtensions`,
			}},
		{name: "confidential compute disabled on n1", value: with(t, valid, `{"confidentialCompute":"Disabled"}`)},
		{name: "spot provisioning", value: with(t, valid, `{"provisioningModel":"Spot"}`)},
		// Breaks if: provisioningModel is not checked.
		{name: "unknown provisioning model", value: with(t, valid, `{"provisioningModel":"Reserved"}`),
			wantErrs: []string{`providerSpec.provisioningModel: Invalid value: "Reserved": provisioningModel must be "Spot" or omit for standard provisioning`}},
		// Breaks if: preemptible is allowed together with Spot.
		{name: "spot and preemptible", value: with(t, valid, `{"provisioningModel":"Spot","preemptible":true}`),
			wantErrs: []string{`providerSpec.provisioningModel: Forbidden: preemptible cannot be used together with "Spot" provisioning model`}},
		{name: "preemptible alone", value: with(t, valid, `{"preemptible":true}`)},
		// Breaks if: the provisioningModel check moves after the GPU host maintenance rule (OpenShift's order).
		{name: "unknown provisioning model, GPUs migrating", value: with(t, valid, `{"provisioningModel":"","gpus":[{"type":"nvidia-tesla-t4","count":1}],"onHostMaintenance":"Migrate"}`),
			wantErrs: []string{
				`providerSpec.provisioningModel: Invalid value: "": provisioningModel must be "Spot" or omit for standard provisioning`,
				"providerSpec.onHostMaintenance: Forbidden: When GPUs are specified or using machineType with pre-attached GPUs(A2 machine family), onHostMaintenance must be set to Terminate.",
			}},
		{name: "GPUs while migrating", value: with(t, valid, `{"gpus":[{"type":"nvidia-tesla-t4","count":1}],"onHostMaintenance":"Migrate"}`),
			wantErrs: []string{"providerSpec.onHostMaintenance: Forbidden: When GPUs are specified or using machineType with pre-attached GPUs(A2 machine family), onHostMaintenance must be set to Terminate."}},
		{name: "GPUs", value: with(t, valid, `{"gpus":[{"type":"nvidia-tesla-a100","count":1}],"machineType":"a2-highgpu-1g","onHostMaintenance":"Terminate"}`),
			wantErrs: []string{
				`providerSpec.gpus.Type: Invalid value: "nvidia-tesla-a100":  nvidia-tesla-a100 gpus, are only attached to the A2 machine types`,
				`providerSpec.gpus: Invalid value: "nvidia-tesla-a100": A2 machine types have already attached gpus, additional gpus cannot be specified`,
			}},
		{name: "two GPU kinds", value: with(t, valid, `{"gpus":[{"type":"a"},{"type":""}],"onHostMaintenance":"Terminate"}`),
			wantErrs: []string{"providerSpec.gpus: Too many: 2: must have at most 1 item"}},
		{name: "GPU without type", value: with(t, valid, `{"gpus":[{"count":1}],"onHostMaintenance":"Terminate"}`),
			wantErrs: []string{"providerSpec.gpus.Type: Required value: Type is required"}},
		{name: "network interface without names", value: with(t, valid, `{"networkInterfaces":[{}]}`),
			wantErrs: []string{
				"providerSpec.networkInterfaces[0].network: Required value: network is required",
				"providerSpec.networkInterfaces[0].subnetwork: Required value: subnetwork is required",
			}},
		{name: "disks", value: with(t, valid, `{"disks":[{"sizeGb":10,"type":"pd-fast"},{"sizeGb":70000}]}`),
			wantErrs: []string{
				"providerSpec.disks[0].sizeGb: Invalid value: 10: must be at least 16GB in size",
				`providerSpec.disks[0].type: Unsupported value: "pd-fast": supported values: "hyperdisk-balanced", "pd-balanced", "pd-ssd", "pd-standard"`,
				"providerSpec.disks[1].sizeGb: Invalid value: 70000: exceeding maximum GCP disk size limit, must be below 65536",
			}},
		{name: "no service account", value: with(t, valid, `{"serviceAccounts":null}`), wantWarnings: []string{noServiceAccount}},
		{name: "two service accounts", value: with(t, valid, `{"serviceAccounts":[{"email":"a","scopes":["s"]},{"email":"b","scopes":["s"]}]}`),
			wantErrs: []string{`providerSpec.serviceAccounts: Invalid value: "2 service accounts supplied": exactly 1 service account must be supplied`}},
		{name: "service account without email and scopes", value: with(t, valid, `{"serviceAccounts":[{}]}`),
			wantErrs: []string{
				"providerSpec.serviceAccounts[0].email: Required value: email is required",
				"providerSpec.serviceAccounts[0].scopes: Required value: at least 1 scope is required",
			}},
	}, secretCases(t, valid)...))
}
