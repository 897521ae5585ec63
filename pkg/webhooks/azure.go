package webhooks

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Azure defaults and limits (OpenShift's).
const (
	defaultAzureCredentialsSecret = "azure-cloud-credentials"
	azureMaxDiskSizeGB            = 32768
	azureEphemeralLocal           = "Local"
	// The installer creates one image version whose name varies: "latest" picks it.
	azureRHCOSVersion = "latest"
)

// azureMarketplaceImages are the default marketplace images (publisher, offer, SKU,
// version) by control plane arch; amd64's is hyperV generation 1.
var azureMarketplaceImages = map[string]machinev1beta1.Image{
	archAMD64: {Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_420", Version: "9.6.20251015"},
	archARM64: {Publisher: "azureopenshift", Offer: "aro4", SKU: "420-arm", Version: "9.6.20251015"},
}

// azureVMSizes are the default VM sizes by control plane arch.
var azureVMSizes = map[string]string{archAMD64: "Standard_D4s_V3", archARM64: "Standard_D4ps_V5"}

// azureDataDiskSuffix: alphanumeric ends; letters, digits, _ . - between.
var azureDataDiskSuffix = regexp.MustCompile(`^[a-zA-Z0-9](?:[\w\.-]*[a-zA-Z0-9])?$`)

func init() {
	register(ProviderAzure, "AzureMachineProviderSpec", []string{"azureproviderconfig.openshift.io", machinev1beta1.GroupName}, defaultAzure, validateAzure)
}

// defaultAzure also fills the network the installer made and the image.
func defaultAzure(spec *machinev1beta1.AzureMachineProviderSpec, env platformEnv) []string {
	warnings := defaultInstanceType(&spec.VMSize, ProviderAzure, env.arch, azureVMSizes)
	id := env.cluster.InfrastructureName
	// The virtual network and subnet are given together or defaulted together.
	if spec.Vnet == "" && spec.Subnet == "" {
		spec.Vnet = id + "-vnet"
		spec.Subnet = id + "-worker-subnet"
	}
	if spec.Image == (machinev1beta1.Image{}) {
		spec.Image = defaultAzureImage(spec.SecurityProfile != nil, id, env.arch)
	}
	// Each of the Secret references' name and namespace is defaulted on its own.
	defaultPtr(&spec.UserDataSecret, corev1.SecretReference{})
	defaultPtr(&spec.CredentialsSecret, corev1.SecretReference{})
	spec.UserDataSecret.Name = cmp.Or(spec.UserDataSecret.Name, defaultUserDataSecret)
	spec.CredentialsSecret.Namespace = cmp.Or(spec.CredentialsSecret.Namespace, defaultSecretNamespace)
	spec.CredentialsSecret.Name = cmp.Or(spec.CredentialsSecret.Name, defaultAzureCredentialsSecret)
	return warnings
}

// defaultAzureImage is OpenShift's (OCPBUGS-66244): the marketplace image for the arch
// (else amd64's); with a security profile (confidential VMs and trusted launch are
// x86 and hyperV generation 2 only) the installer's -gen2 image in the cluster's
// gallery, named without dashes.
func defaultAzureImage(securityProfile bool, id, arch string) machinev1beta1.Image {
	if securityProfile {
		return machinev1beta1.Image{ResourceID: fmt.Sprintf("/resourceGroups/%s-rg/providers/Microsoft.Compute/galleries/gallery_%s/images/%s-gen2/versions/%s",
			id, strings.ReplaceAll(id, "-", "_"), id, azureRHCOSVersion)}
	}
	if image, ok := azureMarketplaceImages[arch]; ok {
		return image
	}
	return azureMarketplaceImages[archAMD64]
}

func validateAzure(spec *machinev1beta1.AzureMachineProviderSpec, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.check(spec.VMSize == "", field.Required(p.Child("vmSize"), "vmSize should be set to one of the supported Azure VM sizes"))
	v.check(spec.PublicIP && env.cluster.DNSDisconnected,
		field.Forbidden(p.Child("publicIP"), "publicIP is not allowed in Azure disconnected installation with publish strategy as internal"))
	v.check(spec.Vnet != "" && spec.Subnet == "",
		field.Required(p.Child("subnet"), "must provide a subnet when a virtual network is specified"))
	v.check(spec.Subnet != "" && spec.Vnet == "",
		field.Required(p.Child("vnet"), "must provide a virtual network when supplying subnets"))
	v.add(validateAzureImage(spec.Image, p.Child("image")), nil)
	if spec.UserDataSecret == nil {
		v.check(true, field.Required(p.Child("userDataSecret"), "userDataSecret must be provided"))
	} else {
		v.check(spec.UserDataSecret.Name == "", field.Required(p.Child("userDataSecret", "name"), "name must be provided"))
	}
	if c := spec.CredentialsSecret; c == nil {
		v.check(true, field.Required(p.Child("credentialsSecret"), "credentialsSecret must be provided"))
	} else {
		v.check(c.Namespace == "", field.Required(p.Child("credentialsSecret", "namespace"), "namespace must be provided"))
		v.check(c.Name == "", field.Required(p.Child("credentialsSecret", "name"), "name must be provided"))
		if c.Name != "" && c.Namespace != "" {
			v.add(nil, env.credentialsWarnings(c.Namespace, c.Name))
		}
	}
	osDisk := p.Child("osDisk")
	v.add(validateAzureOSDiskSize(spec.OSDisk, osDisk), nil)
	// As OpenShift, between the OS disk's location and caching checks.
	if id := spec.CapacityReservationGroupID; id != "" {
		err := checkAzureResourceID(strings.TrimPrefix(id, "azure://"))
		v.check(err != nil, field.Invalid(p.Child("capacityReservationGroupID"), id, fmt.Sprint(err)))
	}
	v.add(validateAzureOSDiskCaching(spec.OSDisk, osDisk), nil)
	ultra := spec.UltraSSDCapability
	enabled, disabled := machinev1beta1.AzureUltraSSDCapabilityEnabled, machinev1beta1.AzureUltraSSDCapabilityDisabled
	v.check(ultra != enabled && ultra != disabled && ultra != "", field.Invalid(p.Child("ultraSSDCapability"), ultra,
		fmt.Sprintf("ultraSSDCapability can be only %s, %s or omitted", enabled, disabled)))
	v.add(validateAzureSecurityProfile(spec, p.Child("securityProfile")), nil)
	v.add(validateAzureDataDisks(env.name, spec.DataDisks, p.Child("dataDisks")), nil)
	v.add(validateAzureDiagnostics(spec.Diagnostics, p.Child("diagnostics")), nil)
	v.warn(env.cluster.AzureGovCloud && spec.SpotVMOptions != nil, "spot VMs may not be supported when using GovCloud region")
	return v.errs, v.warnings
}

// validateAzureImage: a resource ID alone, or offer, publisher, SKU and version
// (OpenShift names these paths with capitals: image.Offer).
func validateAzureImage(image machinev1beta1.Image, path *field.Path) field.ErrorList {
	var v verdict
	switch {
	case image == (machinev1beta1.Image{}):
		v.check(true, field.Required(path, "an image reference must be provided"))
	case image.ResourceID != "":
		v.check(image != (machinev1beta1.Image{ResourceID: image.ResourceID}), field.Required(path.Child("resourceID"),
			"resourceID is already specified, other fields such as [Offer, Publisher, SKU, Version] should not be set"))
	default:
		for _, f := range []struct{ name, value string }{{"Offer", image.Offer}, {"Publisher", image.Publisher}, {"SKU", image.SKU}, {"Version", image.Version}} {
			v.check(f.value == "", field.Required(path.Child(f.name), f.name+" must be provided"))
		}
	}
	return v.errs
}

// validateAzureOSDiskSize checks the OS disk's size and ephemeral storage location.
func validateAzureOSDiskSize(d machinev1beta1.OSDisk, path *field.Path) field.ErrorList {
	var v verdict
	v.check(d.DiskSizeGB <= 0 || d.DiskSizeGB >= azureMaxDiskSizeGB,
		field.Invalid(path.Child("diskSizeGB"), d.DiskSizeGB, "diskSizeGB must be greater than zero and less than 32768"))
	loc := d.DiskSettings.EphemeralStorageLocation
	v.check(loc != azureEphemeralLocal && loc != "", field.Invalid(path.Child("diskSettings", "ephemeralStorageLocation"), loc,
		fmt.Sprintf("osDisk.diskSettings.ephemeralStorageLocation can either be omitted or set to %s", azureEphemeralLocal)))
	return v.errs
}

// validateAzureOSDiskCaching checks the OS disk's caching type, ReadOnly on an ephemeral disk.
func validateAzureOSDiskCaching(d machinev1beta1.OSDisk, path *field.Path) field.ErrorList {
	var v verdict
	loc := d.DiskSettings.EphemeralStorageLocation
	v.check(!slices.Contains([]string{"None", "ReadOnly", "ReadWrite", ""}, d.CachingType),
		field.Invalid(path.Child("cachingType"), d.CachingType, "osDisk.cachingType can be only None, ReadOnly, ReadWrite or omitted"))
	v.check(loc == azureEphemeralLocal && d.CachingType != "ReadOnly",
		field.Invalid(path.Child("cachingType"), d.CachingType, "Instances using an ephemeral OS disk support only Readonly caching"))
	return v.errs
}

// validateAzureSecurityProfile reports, as OpenShift, the first inconsistency with the disk encryption.
func validateAzureSecurityProfile(spec *machinev1beta1.AzureMachineProviderSpec, path *field.Path) field.ErrorList {
	encryption := spec.OSDisk.ManagedDisk.SecurityProfile.SecurityEncryptionType
	sp := spec.SecurityProfile
	if sp == nil {
		if encryption == "" {
			return nil
		}
		return field.ErrorList{field.Required(path, "securityProfile should be set when osDisk.managedDisk.securityProfile.securityEncryptionType is defined.")}
	}
	settings := path.Child("settings")
	switch sp.Settings.SecurityType {
	case machinev1beta1.SecurityTypesConfidentialVM:
		if encryption == "" {
			return field.ErrorList{field.Required(path.Root().Child("osDisk", "managedDisk", "securityProfile", "securityEncryptionType"),
				fmt.Sprintf("securityEncryptionType should be set when securityType is set to %s.", machinev1beta1.SecurityTypesConfidentialVM))}
		}
		cvm := sp.Settings.ConfidentialVM
		if cvm == nil {
			return field.ErrorList{field.Required(settings.Child("confidentialVM"),
				fmt.Sprintf("confidentialVM should be set when securityType is set to %s.", machinev1beta1.SecurityTypesConfidentialVM))}
		}
		uefi := settings.Child("confidentialVM", "uefiSettings")
		if cvm.UEFISettings.VirtualizedTrustedPlatformModule != machinev1beta1.VirtualizedTrustedPlatformModulePolicyEnabled {
			return field.ErrorList{field.Invalid(uefi.Child("virtualizedTrustedPlatformModule"), cvm.UEFISettings.VirtualizedTrustedPlatformModule,
				fmt.Sprintf("virtualizedTrustedPlatformModule should be enabled when securityType is set to %s.", machinev1beta1.SecurityTypesConfidentialVM))}
		}
		if encryption == machinev1beta1.SecurityEncryptionTypesDiskWithVMGuestState {
			if sp.EncryptionAtHost != nil && *sp.EncryptionAtHost {
				return field.ErrorList{field.Invalid(path.Child("encryptionAtHost"), sp.EncryptionAtHost,
					fmt.Sprintf("encryptionAtHost cannot be set to true when securityEncryptionType is set to %s.", machinev1beta1.SecurityEncryptionTypesDiskWithVMGuestState))}
			}
			if cvm.UEFISettings.SecureBoot != machinev1beta1.SecureBootPolicyEnabled {
				return field.ErrorList{field.Invalid(uefi.Child("secureBoot"), cvm.UEFISettings.SecureBoot,
					fmt.Sprintf("secureBoot should be enabled when securityEncryptionType is set to %s.", machinev1beta1.SecurityEncryptionTypesDiskWithVMGuestState))}
			}
		}
	case machinev1beta1.SecurityTypesTrustedLaunch:
		if sp.Settings.TrustedLaunch == nil {
			return field.ErrorList{field.Required(settings.Child("trustedLaunch"),
				fmt.Sprintf("trustedLaunch should be set when securityType is set to %s.", machinev1beta1.SecurityTypesTrustedLaunch))}
		}
	default:
		if encryption != "" {
			return field.ErrorList{field.Invalid(settings.Child("securityType"), sp.Settings.SecurityType,
				fmt.Sprintf("securityType should be set to %s when securityEncryptionType is defined.", machinev1beta1.SecurityTypesConfidentialVM))}
		}
		if tl := sp.Settings.TrustedLaunch; tl != nil && (tl.UEFISettings.SecureBoot == machinev1beta1.SecureBootPolicyEnabled ||
			tl.UEFISettings.VirtualizedTrustedPlatformModule == machinev1beta1.VirtualizedTrustedPlatformModulePolicyEnabled) {
			return field.ErrorList{field.Invalid(settings.Child("securityType"), sp.Settings.SecurityType,
				fmt.Sprintf("securityType should be set to %s when uefiSettings are enabled.", machinev1beta1.SecurityTypesTrustedLaunch))}
		}
	}
	return nil
}

// validateAzureDataDisks checks each data disk, named "<machine name>_<nameSuffix>".
func validateAzureDataDisks(machineName string, disks []machinev1beta1.DataDisk, path *field.Path) field.ErrorList {
	var v verdict
	luns := map[int32]bool{}
	suffixes := map[string]bool{}
	del, det := machinev1beta1.DiskDeletionPolicyTypeDelete, machinev1beta1.DiskDeletionPolicyTypeDetach
	for i, disk := range disks {
		p := path.Index(i)
		suffix := p.Child("nameSuffix")
		v.check(len(machineName+"_"+disk.NameSuffix) > 80,
			field.Invalid(suffix, disk.NameSuffix, "too long, the overall disk name must not exceed 80 chars"))
		v.check(!azureDataDiskSuffix.MatchString(disk.NameSuffix), field.Invalid(suffix, disk.NameSuffix,
			"nameSuffix must be provided, must start and finish with an alphanumeric character and can only contain letters, numbers, underscores, periods or hyphens"))
		v.check(suffixes[disk.NameSuffix], field.Invalid(suffix, disk.NameSuffix, "each Data Disk must have a unique nameSuffix"))
		v.check(disk.DiskSizeGB < 4,
			field.Invalid(p.Child("diskSizeGB"), disk.DiskSizeGB, "diskSizeGB must be provided and at least 4GB in size"))
		v.check(disk.Lun < 0 || disk.Lun > 63,
			field.Invalid(p.Child("lun"), disk.Lun, "must be greater than or equal to 0 and less than 64"))
		v.check(luns[disk.Lun], field.Invalid(p.Child("lun"), disk.Lun, "each Data Disk must have a unique lun"))
		v.check(disk.DeletionPolicy == "",
			field.Required(p.Child("deletionPolicy"), fmt.Sprintf("deletionPolicy must be provided and must be either %s or %s", del, det)))
		v.check(disk.DeletionPolicy != "" && disk.DeletionPolicy != del && disk.DeletionPolicy != det,
			field.Invalid(p.Child("deletionPolicy"), disk.DeletionPolicy, fmt.Sprintf("must be either %s or %s", del, det)))
		ultra := machinev1beta1.StorageAccountUltraSSDLRS
		v.check(disk.ManagedDisk.StorageAccountType == ultra && disk.CachingType != machinev1beta1.CachingTypeNone && disk.CachingType != "",
			field.Invalid(p.Child("cachingType"), disk.CachingType, fmt.Sprintf("must be \"None\" or omitted when storageAccountType is \"%s\"", ultra)))
		luns[disk.Lun] = true
		suffixes[disk.NameSuffix] = true
	}
	return v.errs
}

func validateAzureDiagnostics(d machinev1beta1.AzureDiagnostics, path *field.Path) field.ErrorList {
	if d.Boot == nil {
		return nil
	}
	var v verdict
	customer, cm := d.Boot.CustomerManaged, path.Child("boot", "customerManaged")
	azure, customerManaged := machinev1beta1.AzureManagedAzureDiagnosticsStorage, machinev1beta1.CustomerManagedAzureDiagnosticsStorage
	switch d.Boot.StorageAccountType {
	case customerManaged:
		v.check(customer == nil, field.Required(cm, "customerManaged configuration must be provided"))
		v.check(customer != nil && customer.StorageAccountURI == "", field.Required(cm.Child("storageAccountURI"), "storageAccountURI must be provided"))
	case azure:
		v.check(customer != nil, field.Invalid(cm, customer, "customerManaged may not be set when type is AzureManaged"))
	default:
		v.check(true, field.Invalid(path.Child("boot", "storageAccountType"), d.Boot.StorageAccountType,
			fmt.Sprintf("storageAccountType must be one of: %s, %s", azure, customerManaged)))
	}
	return v.errs
}

// checkAzureResourceID checks an Azure resource ID's shape as OpenShift's parser:
// /subscriptions/<id>[/resourceGroups/<name>]/providers/<namespace>/<type>/<name>... or /providers/...
func checkAzureResourceID(id string) error {
	if id == "" {
		return fmt.Errorf("invalid resource ID: id cannot be empty")
	}
	if !strings.HasPrefix(id, "/") {
		return fmt.Errorf("invalid resource ID: resource id '%s' must start with '/'", id)
	}
	parts := strings.FieldsFunc(id, func(r rune) bool { return r == '/' })
	invalid := fmt.Errorf("invalid resource ID: %s", id)
	if len(parts) < 2 || (!strings.EqualFold(parts[0], "subscriptions") && !strings.EqualFold(parts[0], "providers")) {
		return invalid
	}
	for len(parts) > 0 {
		providers := strings.EqualFold(parts[0], "providers")
		switch {
		case len(parts) == 1:
			// A subscription or resource group needs its name.
			if strings.EqualFold(parts[0], "subscriptions") || strings.EqualFold(parts[0], "resourcegroups") {
				return invalid
			}
			return nil
		case providers && (len(parts) == 2 || strings.EqualFold(parts[2], "providers")):
			parts = parts[2:]
		case providers && len(parts) > 3:
			parts = parts[4:]
		case !providers:
			parts = parts[2:]
		default:
			return invalid
		}
	}
	return nil
}
