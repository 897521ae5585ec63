package webhooks

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

var azureCluster = ClusterInfo{Provider: ProviderAzure, InfrastructureName: testInfraName}

// azureDefaults are the VM size and image (JSON) OpenShift defaults on this
// machine's architecture: the marketplace image.
func azureDefaults() (vmSize, image string) {
	if runtime.GOARCH == "arm64" {
		return "Standard_D4ps_V5", `{"offer":"aro4","publisher":"azureopenshift","resourceID":"","sku":"420-arm","version":"9.6.20251015"}`
	}
	return "Standard_D4s_V3", `{"offer":"aro4","publisher":"azureopenshift","resourceID":"","sku":"aro_420","version":"9.6.20251015"}`
}

func TestDefaultAzure(t *testing.T) {
	vmSize, image := azureDefaults()
	filled := `"vmSize":"` + vmSize + `","vnet":"test-x7k2p-vnet","subnet":"test-x7k2p-worker-subnet",` +
		`"image":` + image + `,` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"azure-cloud-credentials","namespace":"openshift-machine-api"}`
	runDefaulting(t, []defaultingCase{
		{name: "only the OS disk size: the rest is filled in", cluster: azureCluster, in: `{"osDisk":{"diskSizeGB":128}}`,
			want:    `{"osDisk":{"diskSizeGB":128},` + filled + `}`,
			wantSet: []string{"credentialsSecret", "image", "subnet", "userDataSecret", "vmSize", "vnet"}},
		{name: "a virtual network without subnet is not completed", cluster: azureCluster,
			in: `{"vmSize":"s","vnet":"v","image":{"resourceID":"/r"},"userDataSecret":{"name":"u"},"credentialsSecret":{"name":"c","namespace":"n"}}`},
		{name: "names and namespaces of given references", cluster: azureCluster,
			in:      `{"vmSize":"s","vnet":"v","subnet":"s","image":{"sku":"x"},"userDataSecret":{},"credentialsSecret":{"name":"c"}}`,
			want:    `{"vmSize":"s","vnet":"v","subnet":"s","image":{"sku":"x"},"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"c","namespace":"openshift-machine-api"}}`,
			wantSet: []string{"credentialsSecret", "userDataSecret"}},
		{name: "an Azure value on an AWS cluster", cluster: awsCluster, in: `{"kind":"AzureMachineProviderSpec"}`},
	})
}

// TestDefaultAzureImage: OpenShift's image by arch and security profile (OCPBUGS-66244).
func TestDefaultAzureImage(t *testing.T) {
	gallery := "/resourceGroups/c-1-rg/providers/Microsoft.Compute/galleries/gallery_c_1/images/c-1-gen2/versions/latest"
	amd64 := machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_420", Version: "9.6.20251015"}
	for _, tc := range []struct {
		name            string
		arch            string
		securityProfile *machinev1beta1.SecurityProfile
		want            machinev1beta1.Image
	}{
		// Breaks if: the default goes back to the installer's gallery image.
		{name: "amd64: the hyperV generation 1 marketplace image", arch: "amd64", want: amd64},
		// Breaks if: arm64 gets amd64's SKU.
		{name: "arm64: the arm marketplace image", arch: "arm64",
			want: machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "420-arm", Version: "9.6.20251015"}},
		{name: "another arch: amd64's", arch: "ppc64le", want: amd64},
		// Breaks if: a confidential VM gets the marketplace image (generation 1 cannot boot it).
		{name: "confidential VM: the installer's generation 2 gallery image", arch: "amd64",
			securityProfile: &machinev1beta1.SecurityProfile{Settings: machinev1beta1.SecuritySettings{SecurityType: machinev1beta1.SecurityTypesConfidentialVM}},
			want:            machinev1beta1.Image{ResourceID: gallery}},
		// Breaks if: only a confidential security type picks the gallery (OpenShift: any security profile).
		{name: "an empty security profile on arm64: the gallery image too", arch: "arm64",
			securityProfile: &machinev1beta1.SecurityProfile{}, want: machinev1beta1.Image{ResourceID: gallery}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &machinev1beta1.AzureMachineProviderSpec{SecurityProfile: tc.securityProfile}
			defaultAzure(spec, platformEnv{cluster: ClusterInfo{InfrastructureName: "c-1"}, arch: tc.arch})
			if spec.Image != tc.want {
				t.Errorf("image %+v, want %+v", spec.Image, tc.want)
			}
		})
	}
}

func TestDefaultAzureByArch(t *testing.T) {
	spec := &machinev1beta1.AzureMachineProviderSpec{}
	warnings := defaultAzure(spec, platformEnv{cluster: ClusterInfo{InfrastructureName: "c-1"}, arch: "arm64"})
	if spec.VMSize != "Standard_D4ps_V5" {
		t.Errorf("vmSize %q", spec.VMSize)
	}
	want := []string{`setting the default instance type "Standard_D4ps_V5" for cloud provider "Azure", based on the control plane architecture ("arm64")`}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}

func TestValidateAzure(t *testing.T) {
	valid := `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AzureMachineProviderSpec","vmSize":"Standard_D4s_V3","vnet":"v","subnet":"s",` +
		`"image":{"resourceID":"/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/i/versions/latest"},` +
		`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"azure-cloud-credentials","namespace":"openshift-machine-api"},"osDisk":{"diskSizeGB":128}}`
	secrets := secretsIn("openshift-machine-api/azure-cloud-credentials")
	runValidation(t, azureCluster, secrets, []validationCase{
		{name: "valid", value: valid},
		{name: "legacy group", value: with(t, valid, `{"apiVersion":"azureproviderconfig.openshift.io/v1beta1"}`)},
		{name: "nothing given", value: `{}`,
			wantErrs: []string{
				"providerSpec.vmSize: Required value: vmSize should be set to one of the supported Azure VM sizes",
				"providerSpec.image: Required value: an image reference must be provided",
				"providerSpec.userDataSecret: Required value: userDataSecret must be provided",
				"providerSpec.credentialsSecret: Required value: credentialsSecret must be provided",
				"providerSpec.osDisk.diskSizeGB: Invalid value: 0: diskSizeGB must be greater than zero and less than 32768",
			},
			wantWarnings: []string{"incorrect GroupVersionKind for AzureMachineProviderSpec object: /, Kind="}},
		{name: "public IP on a connected cluster", value: with(t, valid, `{"publicIP":true}`)},
		{name: "virtual network without subnet", value: with(t, valid, `{"subnet":null}`),
			wantErrs: []string{"providerSpec.subnet: Required value: must provide a subnet when a virtual network is specified"}},
		{name: "subnet without virtual network", value: with(t, valid, `{"vnet":null}`),
			wantErrs: []string{"providerSpec.vnet: Required value: must provide a virtual network when supplying subnets"}},
		{name: "resource ID and marketplace image", value: with(t, valid, `{"image":{"resourceID":"/r","offer":"o"}}`),
			wantErrs: []string{"providerSpec.image.resourceID: Required value: resourceID is already specified, other fields such as [Offer, Publisher, SKU, Version] should not be set"}},
		{name: "incomplete marketplace image", value: with(t, valid, `{"image":{"offer":"o","publisher":"p"}}`),
			wantErrs: []string{"providerSpec.image.SKU: Required value: SKU must be provided", "providerSpec.image.Version: Required value: Version must be provided"}},
		{name: "unnamed references", value: with(t, valid, `{"userDataSecret":{},"credentialsSecret":{}}`),
			wantErrs: []string{
				"providerSpec.userDataSecret.name: Required value: name must be provided",
				"providerSpec.credentialsSecret.namespace: Required value: namespace must be provided",
				"providerSpec.credentialsSecret.name: Required value: name must be provided",
			}},
		{name: "credentials Secret in another namespace, missing", value: with(t, valid, `{"credentialsSecret":{"name":"c","namespace":"other"}}`),
			wantWarnings: []string{`providerSpec.credentialsSecret: Invalid value: "c": not found. Expected CredentialsSecret to exist`}},
		{name: "OS disk too large", value: with(t, valid, `{"osDisk":{"diskSizeGB":32768}}`),
			wantErrs: []string{"providerSpec.osDisk.diskSizeGB: Invalid value: 32768: diskSizeGB must be greater than zero and less than 32768"}},
		{name: "ephemeral OS disk with read-write caching", value: with(t, valid, `{"osDisk":{"diskSizeGB":128,"cachingType":"ReadWrite","diskSettings":{"ephemeralStorageLocation":"Local"}}}`),
			wantErrs: []string{`providerSpec.osDisk.cachingType: Invalid value: "ReadWrite": Instances using an ephemeral OS disk support only Readonly caching`}},
		{name: "ephemeral location and caching type", value: with(t, valid, `{"osDisk":{"diskSizeGB":128,"cachingType":"Write","diskSettings":{"ephemeralStorageLocation":"Remote"}}}`),
			wantErrs: []string{
				`providerSpec.osDisk.diskSettings.ephemeralStorageLocation: Invalid value: "Remote": osDisk.diskSettings.ephemeralStorageLocation can either be omitted or set to Local`,
				`providerSpec.osDisk.cachingType: Invalid value: "Write": osDisk.cachingType can be only None, ReadOnly, ReadWrite or omitted`,
			}},
		// Breaks if: the capacity reservation group is checked after the OS disk's caching (OpenShift's order).
		{name: "capacity reservation group between the OS disk checks", value: with(t, valid,
			`{"capacityReservationGroupID":"/subscriptions","osDisk":{"diskSizeGB":0,"cachingType":"Write"}}`),
			wantErrs: []string{
				"providerSpec.osDisk.diskSizeGB: Invalid value: 0: diskSizeGB must be greater than zero and less than 32768",
				`providerSpec.capacityReservationGroupID: Invalid value: "/subscriptions": invalid resource ID: /subscriptions`,
				`providerSpec.osDisk.cachingType: Invalid value: "Write": osDisk.cachingType can be only None, ReadOnly, ReadWrite or omitted`,
			}},
		{name: "capacity reservation group with the provider ID prefix", value: with(t, valid, `{"capacityReservationGroupID":"azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/g"}`)},
		{name: "capacity reservation group, other root", value: with(t, valid, `{"capacityReservationGroupID":"/tenants/t"}`),
			wantErrs: []string{`providerSpec.capacityReservationGroupID: Invalid value: "/tenants/t": invalid resource ID: /tenants/t`}},
		{name: "capacity reservation group", value: with(t, valid, `{"capacityReservationGroupID":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/g"}`)},
		{name: "capacity reservation group, relative", value: with(t, valid, `{"capacityReservationGroupID":"subscriptions/s"}`),
			wantErrs: []string{`providerSpec.capacityReservationGroupID: Invalid value: "subscriptions/s": invalid resource ID: resource id 'subscriptions/s' must start with '/'`}},
		{name: "capacity reservation group, resource group without name", value: with(t, valid, `{"capacityReservationGroupID":"/subscriptions/s/resourceGroups"}`),
			wantErrs: []string{`providerSpec.capacityReservationGroupID: Invalid value: "/subscriptions/s/resourceGroups": invalid resource ID: /subscriptions/s/resourceGroups`}},
		{name: "ultra SSD capability", value: with(t, valid, `{"ultraSSDCapability":"Maybe"}`),
			wantErrs: []string{`providerSpec.ultraSSDCapability: Invalid value: "Maybe": ultraSSDCapability can be only Enabled, Disabled or omitted`}},
		{name: "disk encryption without security profile", value: with(t, valid, `{"osDisk":{"diskSizeGB":128,"managedDisk":{"securityProfile":{"securityEncryptionType":"VMGuestStateOnly"}}}}`),
			wantErrs: []string{"providerSpec.securityProfile: Required value: securityProfile should be set when osDisk.managedDisk.securityProfile.securityEncryptionType is defined."}},
		{name: "confidential VM without disk encryption", value: with(t, valid, `{"securityProfile":{"settings":{"securityType":"ConfidentialVM"}}}`),
			wantErrs: []string{"providerSpec.osDisk.managedDisk.securityProfile.securityEncryptionType: Required value: securityEncryptionType should be set when securityType is set to ConfidentialVM."}},
		{name: "confidential VM without vTPM", value: with(t, valid, `{"osDisk":{"diskSizeGB":128,"managedDisk":{"securityProfile":{"securityEncryptionType":"VMGuestStateOnly"}}},"securityProfile":{"settings":{"securityType":"ConfidentialVM","confidentialVM":{"uefiSettings":{}}}}}`),
			wantErrs: []string{`providerSpec.securityProfile.settings.confidentialVM.uefiSettings.virtualizedTrustedPlatformModule: Invalid value: "": virtualizedTrustedPlatformModule should be enabled when securityType is set to ConfidentialVM.`}},
		{name: "trusted launch without settings", value: with(t, valid, `{"securityProfile":{"settings":{"securityType":"TrustedLaunch"}}}`),
			wantErrs: []string{"providerSpec.securityProfile.settings.trustedLaunch: Required value: trustedLaunch should be set when securityType is set to TrustedLaunch."}},
		{name: "UEFI settings without trusted launch", value: with(t, valid, `{"securityProfile":{"settings":{"trustedLaunch":{"uefiSettings":{"secureBoot":"Enabled"}}}}}`),
			wantErrs: []string{`providerSpec.securityProfile.settings.securityType: Invalid value: "": securityType should be set to TrustedLaunch when uefiSettings are enabled.`}},
		{name: "data disks", value: with(t, valid, `{"dataDisks":[`+
			`{"nameSuffix":"-bad","diskSizeGB":2,"lun":64},`+
			`{"nameSuffix":"d","diskSizeGB":4,"lun":1,"deletionPolicy":"Keep"},`+
			`{"nameSuffix":"d","diskSizeGB":4,"lun":1,"deletionPolicy":"Delete","managedDisk":{"storageAccountType":"UltraSSD_LRS"},"cachingType":"ReadOnly"},`+
			`{"nameSuffix":"`+strings.Repeat("x", 79)+`","diskSizeGB":8,"lun":2,"deletionPolicy":"Detach"}]}`),
			wantErrs: []string{
				`providerSpec.dataDisks[0].nameSuffix: Invalid value: "-bad": nameSuffix must be provided, must start and finish with an alphanumeric character and can only contain letters, numbers, underscores, periods or hyphens`,
				`providerSpec.dataDisks[0].diskSizeGB: Invalid value: 2: diskSizeGB must be provided and at least 4GB in size`,
				`providerSpec.dataDisks[0].lun: Invalid value: 64: must be greater than or equal to 0 and less than 64`,
				`providerSpec.dataDisks[0].deletionPolicy: Required value: deletionPolicy must be provided and must be either Delete or Detach`,
				`providerSpec.dataDisks[1].deletionPolicy: Invalid value: "Keep": must be either Delete or Detach`,
				`providerSpec.dataDisks[2].nameSuffix: Invalid value: "d": each Data Disk must have a unique nameSuffix`,
				`providerSpec.dataDisks[2].lun: Invalid value: 1: each Data Disk must have a unique lun`,
				`providerSpec.dataDisks[2].cachingType: Invalid value: "ReadOnly": must be "None" or omitted when storageAccountType is "UltraSSD_LRS"`,
				`providerSpec.dataDisks[3].nameSuffix: Invalid value: "` + strings.Repeat("x", 79) + `": too long, the overall disk name must not exceed 80 chars`,
			}},
		{name: "customer-managed boot diagnostics without account", value: with(t, valid, `{"diagnostics":{"boot":{"storageAccountType":"CustomerManaged"}}}`),
			wantErrs: []string{"providerSpec.diagnostics.boot.customerManaged: Required value: customerManaged configuration must be provided"}},
		{name: "boot diagnostics type", value: with(t, valid, `{"diagnostics":{"boot":{"storageAccountType":"Elsewhere"}}}`),
			wantErrs: []string{`providerSpec.diagnostics.boot.storageAccountType: Invalid value: "Elsewhere": storageAccountType must be one of: AzureManaged, CustomerManaged`}},
		{name: "spot VM on the public cloud", value: with(t, valid, `{"spotVMOptions":{}}`)},
	})

	disconnected := azureCluster
	disconnected.DNSDisconnected = true
	disconnected.AzureGovCloud = true
	runValidation(t, disconnected, secrets, []validationCase{
		{name: "public IP on a disconnected cluster", value: with(t, valid, `{"publicIP":true}`),
			wantErrs: []string{"providerSpec.publicIP: Forbidden: publicIP is not allowed in Azure disconnected installation with publish strategy as internal"}},
		{name: "spot VM on a government cloud", value: with(t, valid, `{"spotVMOptions":{}}`),
			wantWarnings: []string{"spot VMs may not be supported when using GovCloud region"}},
	})
}
