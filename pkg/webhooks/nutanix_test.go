package webhooks

import (
	"strings"
	"testing"
)

var nutanixCluster = ClusterInfo{Provider: ProviderNutanix, InfrastructureName: testInfraName}

func TestDefaultNutanix(t *testing.T) {
	runDefaulting(t, []defaultingCase{
		{name: "the Secrets are filled in", cluster: nutanixCluster, in: `{"vcpuSockets":2}`,
			want:    `{"vcpuSockets":2,"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"nutanix-credentials"}}`,
			wantSet: []string{"credentialsSecret", "userDataSecret"}},
		{name: "the Nutanix kind in machine.openshift.io/v1", cluster: nutanixCluster,
			in:      `{"apiVersion":"machine.openshift.io/v1","kind":"NutanixMachineProviderConfig","credentialsSecret":{"name":"c"}}`,
			want:    `{"apiVersion":"machine.openshift.io/v1","kind":"NutanixMachineProviderConfig","credentialsSecret":{"name":"c"},"userDataSecret":{"name":"worker-user-data"}}`,
			wantSet: []string{"userDataSecret"}},
		{name: "a Nutanix value on a PowerVS cluster", cluster: powerVSCluster, in: `{"kind":"NutanixMachineProviderConfig"}`},
	})
}

func TestValidateNutanix(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1","kind":"NutanixMachineProviderConfig","cluster":{"type":"name","name":"pe"},"image":{"type":"uuid","uuid":"u-1"},` +
		`"subnets":[{"type":"name","name":"vlan"}],"vcpuSockets":4,"vcpusPerSocket":1,"memorySize":"16Gi","systemDiskSize":"120Gi",` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"nutanix-credentials"}}`
	runValidation(t, nutanixCluster, secretsIn("openshift-machine-api/nutanix-credentials"), append([]validationCase{
		{name: "valid", value: valid},
		{name: "no apiVersion and kind: no warning", value: with(t, valid, `{"apiVersion":null,"kind":null}`)},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				`providerSpec.cluster.type: Invalid value: "": cluster type must be one of name or uuid`,
				`providerSpec.image.type: Invalid value: "": image type must be one of name or uuid`,
				`providerSpec.subnets: Invalid value: "null": missing subnets: nodes may fail to start if no subnets are configured`,
				"providerSpec.userDataSecret: Required value: userDataSecret must be provided",
				"providerSpec.credentialsSecret: Required value: credentialsSecret must be provided",
			},
			wantWarnings: []string{
				"providerSpec.vcpuSockets: 0 is missing or less than the minimum value (1): nodes may not boot correctly",
				"providerSpec.vcpusPerSocket: 0 is missing or less than the minimum value (1): nodes may not boot correctly",
				"providerSpec.memorySize: 0 is missing or less than the recommended minimum value (2048): nodes may not boot correctly",
				"providerSpec.systemDiskSize: 0 is missing or less than the recommended minimum (20): nodes may fail to start if disk size is too low",
			}},
		{name: "identifiers without values", value: with(t, valid, `{"cluster":{"type":"name","name":""},"image":{"type":"uuid"}}`),
			wantErrs: []string{
				"providerSpec.cluster.name: Required value: cluster name must be provided",
				"providerSpec.image.uuid: Required value: image UUID must be provided",
			}},
		// Breaks if: more than one subnet is refused (OpenShift's older rule).
		{name: "two subnets", value: with(t, valid, `{"subnets":[{"type":"name","name":"a"},{"type":"uuid","uuid":"u-2"}]}`)},
		{name: "two subnets, one bad", value: with(t, valid, `{"subnets":[{"type":"name","name":"a"},{"type":"id"}]}`),
			wantErrs: []string{`providerSpec.subnet.type: Invalid value: "id": subnet type must be one of name or uuid`}},
		// Breaks if: the limit is not 32.
		{name: "33 subnets", value: with(t, valid, `{"subnets":[`+strings.TrimSuffix(strings.Repeat(`{"type":"name","name":"a"},`, 33), ",")+`]}`),
			wantErrs: []string{"providerSpec.subnets: Too many: 33: must have at most 32 items"}},
		// Breaks if: duplicates are accepted, or reported once per value rather than per earlier equal subnet.
		{name: "one subnet three times", value: with(t, valid, `{"subnets":[{"type":"name","name":"a"},{"type":"name","name":"a"},{"type":"name","name":"a"}]}`),
			wantErrs: []string{
				`providerSpec.subnets: Invalid value: "{\"type\":\"name\",\"name\":\"a\"}": should not configure duplicate subnet value`,
				`providerSpec.subnets: Invalid value: "{\"type\":\"name\",\"name\":\"a\"}": should not configure duplicate subnet value`,
				`providerSpec.subnets: Invalid value: "{\"type\":\"name\",\"name\":\"a\"}": should not configure duplicate subnet value`,
			}},
		{name: "GPUs", value: with(t, valid, `{"gpus":[{"type":"DeviceID","deviceID":8},{"type":"Name","name":"Tesla T4"}]}`)},
		// Breaks if: GPUs are not checked.
		{name: "bad GPUs", value: with(t, valid, `{"gpus":[{"type":"DeviceID"},{"type":"Name","name":""},{"type":"Vendor"}]}`),
			wantErrs: []string{
				"providerSpec.gpus.deviceID: Required value: missing gpu deviceID",
				"providerSpec.gpus.name: Required value: missing gpu name",
				`providerSpec.gpus.type: Invalid value: "Vendor": invalid gpu identifier type, the valid types: "DeviceID", "Name".`,
			}},
		{name: "data disks", value: with(t, valid, `{"dataDisks":[{"diskSize":"10Gi","deviceProperties":{"deviceType":"Disk","adapterType":"SCSI","deviceIndex":1},`+
			`"storageConfig":{"diskMode":"Flash","storageContainer":{"type":"uuid","uuid":"c-1"}},"dataSource":{"type":"name","name":"img"}},`+
			`{"diskSize":"1Gi","deviceProperties":{"deviceType":"CDRom","adapterType":"IDE"}}]}`)},
		// Breaks if: data disks are not checked.
		{name: "bad data disks", value: with(t, valid, `{"dataDisks":[`+
			`{"diskSize":"512Mi","deviceProperties":{"deviceType":"Disk","adapterType":"NVMe","deviceIndex":-1},"storageConfig":{"diskMode":"Fast","storageContainer":{"type":"uuid"}},"dataSource":{"type":"uuid"}},`+
			`{"diskSize":"2Gi","deviceProperties":{"deviceType":"CDRom","adapterType":"SCSI"},"storageConfig":{"diskMode":"Standard","storageContainer":{"type":"name"}},"dataSource":{"type":"name"}},`+
			`{"diskSize":"2Gi","deviceProperties":{"deviceType":"Tape","adapterType":"SCSI"},"dataSource":{"type":"id"}}]}`),
			wantErrs: []string{
				`providerSpec.dataDisks.diskSize: Invalid value: "536870912 bytes": The minimum diskSize is 1Gi bytes.`,
				`providerSpec.dataDisks.deviceProperties.adapterType: Invalid value: "NVMe": invalid adapter type for the "Disk" device type, the valid values: "SCSI", "IDE", "PCI", "SATA", "SPAPR".`,
				"providerSpec.dataDisks.deviceProperties.deviceIndex: Invalid value: -1: invalid device index, the valid values are non-negative integers.",
				`providerSpec.dataDisks.storageConfig.diskMode: Invalid value: "Fast": invalid disk mode, the valid values: "Standard", "Flash".`,
				"providerSpec.dataDisks.storageConfig.storageContainer.uuid: Required value: missing storageContainer uuid.",
				"providerSpec.dataDisks.dataSource.uuid: Required value: missing disk dataSource uuid.",
				`providerSpec.dataDisks.deviceProperties.adapterType: Invalid value: "SCSI": invalid adapter type for the "CDRom" device type, the valid values: "IDE", "SATA".`,
				`providerSpec.dataDisks.storageConfig.storageContainer.type: Invalid value: "name": invalid storageContainer reference type, the valid values: "uuid".`,
				"providerSpec.dataDisks.dataSource.name: Required value: missing disk dataSource name.",
				`providerSpec.dataDisks.deviceProperties.deviceType: Invalid value: "Tape": invalid device type, the valid types: "Disk", "CDRom".`,
				`providerSpec.dataDisks.dataSource.type: Invalid value: "id": invalid disk dataSource reference type, the valid values: "uuid", "name".`,
			}},
		{name: "small", value: with(t, valid, `{"memorySize":"1Gi","systemDiskSize":"10Gi"}`),
			wantWarnings: []string{
				"providerSpec.memorySize: 1024 is missing or less than the recommended minimum value (2048): nodes may not boot correctly",
				"providerSpec.systemDiskSize: 10 is missing or less than the recommended minimum (20): nodes may fail to start if disk size is too low",
			}},
		{name: "boot type", value: with(t, valid, `{"bootType":"BIOS"}`),
			wantErrs: []string{`providerSpec.bootType: Invalid value: "BIOS": valid bootType values are: "", "Legacy", "UEFI", "SecureBoot".`}},
		{name: "UEFI", value: with(t, valid, `{"bootType":"UEFI"}`)},
		{name: "project", value: with(t, valid, `{"project":{"type":"name"}}`),
			wantErrs: []string{"providerSpec.project.name: Required value: project name must be provided"}},
		{name: "categories", value: with(t, valid, `{"categories":[{"key":"","value":"v"},{"key":"k","value":"`+strings.Repeat("v", 65)+`"}]}`),
			wantErrs: []string{
				`providerSpec.categories.key: Invalid value: "": key must be a string with length between 1 and 64.`,
				`providerSpec.categories.value: Invalid value: "` + strings.Repeat("v", 65) + `": value must be a string with length between 1 and 64.`,
			}},
	}, secretCases(t, valid)...))
}
