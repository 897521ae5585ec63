package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"

	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Nutanix defaults and recommended minimums (OpenShift's).
const (
	defaultNutanixCredentialsSecret = "nutanix-credentials"
	minNutanixCPUSockets            = 1
	minNutanixCPUPerSocket          = 1
	minNutanixMemoryMiB             = 2048
	minNutanixDiskGiB               = 20
	maxNutanixSubnets               = 32
)

func init() {
	// OpenShift does not check the apiVersion and kind of Nutanix values.
	register(ProviderNutanix, "NutanixMachineProviderConfig", nil, defaultNutanix, validateNutanix)
}

func defaultNutanix(spec *machinev1.NutanixMachineProviderConfig, _ platformEnv) []string {
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultNutanixCredentialsSecret)
	return nil
}

func validateNutanix(spec *machinev1.NutanixMachineProviderConfig, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.add(validateNutanixIdentifier("cluster", spec.Cluster), nil)
	v.add(validateNutanixIdentifier("image", spec.Image), nil)
	v.add(validateNutanixSubnets(spec.Subnets, p.Child("subnets")), nil)
	v.warn(spec.VCPUSockets < minNutanixCPUSockets,
		fmt.Sprintf("providerSpec.vcpuSockets: %d is missing or less than the minimum value (%d): nodes may not boot correctly",
			spec.VCPUSockets, minNutanixCPUSockets))
	v.warn(spec.VCPUsPerSocket < minNutanixCPUPerSocket,
		fmt.Sprintf("providerSpec.vcpusPerSocket: %d is missing or less than the minimum value (%d): nodes may not boot correctly",
			spec.VCPUsPerSocket, minNutanixCPUPerSocket))
	v.warn(spec.MemorySize.Cmp(resource.MustParse(fmt.Sprintf("%dMi", minNutanixMemoryMiB))) < 0, fmt.Sprintf(
		"providerSpec.memorySize: %d is missing or less than the recommended minimum value (%d): nodes may not boot correctly", spec.MemorySize.Value()/(1024*1024), minNutanixMemoryMiB))
	v.warn(spec.SystemDiskSize.Cmp(resource.MustParse(fmt.Sprintf("%dGi", minNutanixDiskGiB))) < 0, fmt.Sprintf(
		"providerSpec.systemDiskSize: %d is missing or less than the recommended minimum (%d): nodes may fail to start if disk size is too low", spec.SystemDiskSize.Value()/(1024*1024*1024), minNutanixDiskGiB))
	v.add(env.validateSecretRef(spec.UserDataSecret, "userDataSecret"))
	v.add(env.validateSecretRef(spec.CredentialsSecret, "credentialsSecret"))
	legacy, uefi, secure := machinev1.NutanixLegacyBoot, machinev1.NutanixUEFIBoot, machinev1.NutanixSecureBoot
	v.check(!slices.Contains([]machinev1.NutanixBootType{"", legacy, uefi, secure}, spec.BootType),
		field.Invalid(p.Child("bootType"), spec.BootType, fmt.Sprintf("valid bootType values are: \"\", %q, %q, %q.", legacy, uefi, secure)))
	if spec.Project.Type != "" {
		v.add(validateNutanixIdentifier("project", spec.Project), nil)
	}
	for _, c := range spec.Categories {
		v.check(len(c.Key) < 1 || len(c.Key) > 64,
			field.Invalid(p.Child("categories", "key"), c.Key, "key must be a string with length between 1 and 64."))
		v.check(len(c.Value) < 1 || len(c.Value) > 64,
			field.Invalid(p.Child("categories", "value"), c.Value, "value must be a string with length between 1 and 64."))
	}
	v.add(validateNutanixGPUs(spec.GPUs, p.Child("gpus")), nil)
	v.add(validateNutanixDataDisks(spec.DataDisks, p.Child("dataDisks")), nil)
	return v.errs, v.warnings
}

// validateNutanixSubnets: 1 to 32 subnets, each valid and given once.
func validateNutanixSubnets(subnets []machinev1.NutanixResourceIdentifier, path *field.Path) field.ErrorList {
	switch n := len(subnets); {
	case n == 0:
		given, _ := json.Marshal(subnets)
		return field.ErrorList{field.Invalid(path, string(given), "missing subnets: nodes may fail to start if no subnets are configured")}
	case n > maxNutanixSubnets:
		return field.ErrorList{field.TooMany(path, n, maxNutanixSubnets)}
	}
	var v verdict
	for i, s := range subnets {
		if errs := validateNutanixIdentifier("subnet", s); len(errs) > 0 {
			v.add(errs, nil)
			continue
		}
		// As OpenShift: one error per earlier equal subnet.
		for _, earlier := range subnets[:i] {
			given, _ := json.Marshal(s)
			v.check(equality.Semantic.DeepEqual(s, earlier), field.Invalid(path, string(given), "should not configure duplicate subnet value"))
		}
	}
	return v.errs
}

// validateNutanixGPUs: each GPU by device ID or name (OpenShift reports no index).
func validateNutanixGPUs(gpus []machinev1.NutanixGPU, path *field.Path) field.ErrorList {
	var v verdict
	byID, byName := machinev1.NutanixGPUIdentifierDeviceID, machinev1.NutanixGPUIdentifierName
	for _, gpu := range gpus {
		switch gpu.Type {
		case byID:
			v.check(gpu.DeviceID == nil, field.Required(path.Child("deviceID"), "missing gpu deviceID"))
		case byName:
			v.check(gpu.Name == nil || *gpu.Name == "", field.Required(path.Child("name"), "missing gpu name"))
		default:
			v.check(true, field.Invalid(path.Child("type"), gpu.Type, fmt.Sprintf("invalid gpu identifier type, the valid types: %q, %q.", byID, byName)))
		}
	}
	return v.errs
}

// validateNutanixDataDisks checks each data disk (OpenShift reports no index).
func validateNutanixDataDisks(disks []machinev1.NutanixVMDisk, path *field.Path) field.ErrorList {
	var v verdict
	for _, d := range disks {
		size := d.DiskSize.Value()
		v.check(size < 1024*1024*1024, field.Invalid(path.Child("diskSize"), fmt.Sprintf("%v bytes", size), "The minimum diskSize is 1Gi bytes."))
		if dp := d.DeviceProperties; dp != nil {
			v.add(validateNutanixDiskDevice(dp, path.Child("deviceProperties")), nil)
		}
		if sc := d.StorageConfig; sc != nil {
			standard, flash := machinev1.NutanixDiskModeStandard, machinev1.NutanixDiskModeFlash
			v.check(sc.DiskMode != standard && sc.DiskMode != flash, field.Invalid(path.Child("storageConfig", "diskMode"), sc.DiskMode,
				fmt.Sprintf("invalid disk mode, the valid values: %q, %q.", standard, flash)))
			if c := sc.StorageContainer; c != nil {
				container := path.Child("storageConfig", "storageContainer")
				uuid := machinev1.NutanixIdentifierUUID
				v.check(c.Type == uuid && (c.UUID == nil || *c.UUID == ""), field.Required(container.Child("uuid"), "missing storageContainer uuid."))
				v.check(c.Type != uuid, field.Invalid(container.Child("type"), c.Type,
					fmt.Sprintf("invalid storageContainer reference type, the valid values: %q.", uuid)))
			}
		}
		if ds := d.DataSource; ds != nil {
			v.add(validateNutanixDataSource(ds, path.Child("dataSource")), nil)
		}
	}
	return v.errs
}

// validateNutanixDiskDevice: the adapter types each device type allows, a non-negative index.
func validateNutanixDiskDevice(dp *machinev1.NutanixVMDiskDeviceProperties, path *field.Path) field.ErrorList {
	var v verdict
	scsi, ide, pci, sata, spapr := machinev1.NutanixDiskAdapterTypeSCSI, machinev1.NutanixDiskAdapterTypeIDE,
		machinev1.NutanixDiskAdapterTypePCI, machinev1.NutanixDiskAdapterTypeSATA, machinev1.NutanixDiskAdapterTypeSPAPR
	disk, cdrom := machinev1.NutanixDiskDeviceTypeDisk, machinev1.NutanixDiskDeviceTypeCDROM
	adapter := path.Child("adapterType")
	switch dp.DeviceType {
	case disk:
		v.check(!slices.Contains([]machinev1.NutanixDiskAdapterType{scsi, ide, pci, sata, spapr}, dp.AdapterType), field.Invalid(adapter, dp.AdapterType,
			fmt.Sprintf("invalid adapter type for the %q device type, the valid values: %q, %q, %q, %q, %q.", disk, scsi, ide, pci, sata, spapr)))
	case cdrom:
		v.check(dp.AdapterType != ide && dp.AdapterType != sata, field.Invalid(adapter, dp.AdapterType,
			fmt.Sprintf("invalid adapter type for the %q device type, the valid values: %q, %q.", cdrom, ide, sata)))
	default:
		v.check(true, field.Invalid(path.Child("deviceType"), dp.DeviceType, fmt.Sprintf("invalid device type, the valid types: %q, %q.", disk, cdrom)))
	}
	v.check(dp.DeviceIndex < 0, field.Invalid(path.Child("deviceIndex"), dp.DeviceIndex, "invalid device index, the valid values are non-negative integers."))
	return v.errs
}

// validateNutanixDataSource: an image reference by UUID or name.
func validateNutanixDataSource(ds *machinev1.NutanixResourceIdentifier, path *field.Path) field.ErrorList {
	uuid, name := machinev1.NutanixIdentifierUUID, machinev1.NutanixIdentifierName
	switch ds.Type {
	case uuid:
		if ds.UUID == nil || *ds.UUID == "" {
			return field.ErrorList{field.Required(path.Child("uuid"), "missing disk dataSource uuid.")}
		}
	case name:
		if ds.Name == nil || *ds.Name == "" {
			return field.ErrorList{field.Required(path.Child("name"), "missing disk dataSource name.")}
		}
	default:
		return field.ErrorList{field.Invalid(path.Child("type"), ds.Type, fmt.Sprintf("invalid disk dataSource reference type, the valid values: %q, %q.", uuid, name))}
	}
	return nil
}

// validateNutanixIdentifier checks a reference by name or UUID at providerSpec.<resource>
// (subnet for each of subnets, as OpenShift names it).
func validateNutanixIdentifier(resource string, id machinev1.NutanixResourceIdentifier) field.ErrorList {
	path := providerSpecPath.Child(resource)
	switch id.Type {
	case machinev1.NutanixIdentifierName:
		if id.Name == nil || *id.Name == "" {
			return field.ErrorList{field.Required(path.Child("name"), fmt.Sprintf("%s name must be provided", resource))}
		}
	case machinev1.NutanixIdentifierUUID:
		if id.UUID == nil || *id.UUID == "" {
			return field.ErrorList{field.Required(path.Child("uuid"), fmt.Sprintf("%s UUID must be provided", resource))}
		}
	default:
		return field.ErrorList{field.Invalid(path.Child("type"), id.Type, fmt.Sprintf("%s type must be one of %s or %s", resource, machinev1.NutanixIdentifierName, machinev1.NutanixIdentifierUUID))}
	}
	return nil
}
