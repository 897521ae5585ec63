package webhooks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/openshift/api/features"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// vSphere defaults and recommended minimums (OpenShift's).
const (
	defaultVSphereCredentialsSecret = "vsphere-cloud-credentials"
	minVSphereCPU                   = 2
	minVSphereMemoryMiB             = 2048
	minVSphereDiskGiB               = 120
	maxVSphereTags                  = 10
	maxVSphereNetworkDevices        = 10
	maxVSphereVMGroupLength         = 80
	// Data disks: a VM's SCSI slots, a name length, and the size OpenShift allows (of vSphere's 62 TiB).
	maxVSphereDataDisks          = 29
	maxVSphereDataDiskNameLength = 80
	maxVSphereDataDiskGiB        = 16384
)

var (
	// vsphereTagURN is a vSphere tag ID: urn:vmomi:InventoryServiceTag:<UUID>:<scope>.
	vsphereTagURN = regexp.MustCompile(`^(urn):(vmomi):(InventoryServiceTag):([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):([^:]+)$`)
	// vsphereDataDiskName: alphanumeric ends; letters, digits, - and _ between.
	vsphereDataDiskName = regexp.MustCompile(`^[a-zA-Z0-9]([-_a-zA-Z0-9]*[a-zA-Z0-9])?$`)
	// vsphereProvisioningModes are the data disks' provisioning modes, sorted.
	vsphereProvisioningModes = []string{string(machinev1beta1.ProvisioningModeEagerlyZeroed), string(machinev1beta1.ProvisioningModeThick), string(machinev1beta1.ProvisioningModeThin)}
)

func init() {
	register(ProviderVSphere, "VSphereMachineProviderSpec", []string{"vsphereprovider.openshift.io", machinev1beta1.GroupName}, defaultVSphere, validateVSphere)
}

func defaultVSphere(spec *machinev1beta1.VSphereMachineProviderSpec, _ platformEnv) []string {
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultVSphereCredentialsSecret)
	return nil
}

func validateVSphere(spec *machinev1beta1.VSphereMachineProviderSpec, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.check(spec.Template == "", field.Required(p.Child("template"), "template must be provided"))
	v.add(validateVSphereWorkspace(spec.Workspace, env.cluster.VSphereHostVMGroupZonal, p.Child("workspace")))
	v.add(validateVSphereNetwork(spec.Network, p.Child("network", "devices")), nil)
	v.warn(spec.NumCPUs < minVSphereCPU,
		fmt.Sprintf("providerSpec.numCPUs: %d is missing or less than the minimum value (%d): nodes may not boot correctly", spec.NumCPUs, minVSphereCPU))
	v.warn(spec.MemoryMiB < minVSphereMemoryMiB,
		fmt.Sprintf("providerSpec.memoryMiB: %d is missing or less than the recommended minimum value (%d): nodes may not boot correctly", spec.MemoryMiB, minVSphereMemoryMiB))
	v.warn(spec.DiskGiB < minVSphereDiskGiB,
		fmt.Sprintf("providerSpec.diskGiB: %d is missing or less than the recommended minimum (%d): nodes may fail to start if disk size is too low", spec.DiskGiB, minVSphereDiskGiB))
	v.warn(spec.CloneMode == machinev1beta1.LinkedClone && spec.DiskGiB > 0,
		fmt.Sprintf("%s clone mode is set. DiskGiB parameter will be ignored, disk size from template will be used.", machinev1beta1.LinkedClone))
	v.add(env.validateSecretRef(spec.UserDataSecret, "userDataSecret"))
	v.check(len(spec.TagIDs) > maxVSphereTags, field.Invalid(p.Child("tagIDs"), spec.TagIDs, "a maximum of 10 tags are allowed"))
	for _, id := range spec.TagIDs {
		v.check(!vsphereTagURN.MatchString(id),
			field.Required(p.Child("tagIDs"), "tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL"))
	}
	v.add(env.validateSecretRef(spec.CredentialsSecret, "credentialsSecret"))
	v.add(validateVSphereDataDisks(spec.DataDisks, p.Child("disks")), nil)
	return v.errs, v.warnings
}

// validateVSphereWorkspace: vmGroup only with the VSphereHostVMGroupZonal gate (as the provider).
func validateVSphereWorkspace(ws *machinev1beta1.Workspace, vmGroupZonal bool, path *field.Path) (field.ErrorList, []string) {
	if ws == nil {
		return field.ErrorList{field.Required(path, "workspace must be provided")}, nil
	}
	var v verdict
	v.check(ws.Server == "", field.Required(path.Child("server"), "server must be provided"))
	v.warn(ws.Datacenter == "",
		fmt.Sprintf("%s: datacenter is unset: if more than one datacenter is present, VMs cannot be created", path.Child("datacenter")))
	// A folder is an absolute path in the datacenter's VM folder.
	prefix := fmt.Sprintf("/%s/vm/", ws.Datacenter)
	v.check(ws.Folder != "" && !strings.HasPrefix(ws.Folder, prefix),
		field.Invalid(path.Child("folder"), ws.Folder, fmt.Sprintf("folder must be absolute path: expected prefix %q", prefix)))
	v.check(vmGroupZonal && len(ws.VMGroup) > maxVSphereVMGroupLength,
		field.Invalid(path.Child("vmGroup"), ws.VMGroup, "vmGroup must be less than 80 characters in length"))
	v.check(!vmGroupZonal && ws.VMGroup != "", field.Invalid(path.Child("vmGroup"), ws.VMGroup,
		fmt.Sprintf("feature gate %s must be enabled to use vmGroup", features.FeatureGateVSphereHostVMGroupZonal)))
	return v.errs, v.warnings
}

// validateVSphereNetwork: 1 to 10 devices (vSphere's adapter limit), each naming its network.
func validateVSphereNetwork(network machinev1beta1.NetworkSpec, path *field.Path) field.ErrorList {
	switch n := len(network.Devices); {
	case n == 0:
		return field.ErrorList{field.Required(path, "at least 1 network device must be provided")}
	case n > maxVSphereNetworkDevices:
		return field.ErrorList{field.TooMany(path, n, maxVSphereNetworkDevices)}
	}
	var v verdict
	for i, d := range network.Devices {
		v.check(d.NetworkName == "", field.Required(path.Index(i).Child("networkName"), "networkName must be provided"))
	}
	return v.errs
}

// validateVSphereDataDisks checks the data disks (at OpenShift's path providerSpec.disks).
func validateVSphereDataDisks(disks []machinev1beta1.VSphereDisk, path *field.Path) field.ErrorList {
	var v verdict
	v.check(len(disks) > maxVSphereDataDisks,
		field.Invalid(path, len(disks), fmt.Sprintf("data disk count must not exceed %d", maxVSphereDataDisks)))
	for i, d := range disks {
		p := path.Index(i)
		name := p.Child("name")
		v.check(d.Name == "", field.Required(name, "data disk name must be set"))
		v.check(len(d.Name) > maxVSphereDataDiskNameLength,
			field.Invalid(name, len(d.Name), fmt.Sprintf("data disk name must not exceed %d", maxVSphereDataDiskNameLength)))
		v.check(d.Name != "" && !vsphereDataDiskName.MatchString(d.Name), field.Invalid(name, d.Name,
			"data disk name must consist only of alphanumeric characters, hyphens and underscores, and must start and end with an alphanumeric character."))
		v.check(d.SizeGiB == 0, field.Required(p.Child("sizeGiB"), "data disk size must be set"))
		v.check(d.SizeGiB > maxVSphereDataDiskGiB,
			field.Invalid(p.Child("sizeGiB"), d.SizeGiB, fmt.Sprintf("data disk size (GiB) must not exceed %d", maxVSphereDataDiskGiB)))
		v.check(d.ProvisioningMode != "" && !slices.Contains(vsphereProvisioningModes, string(d.ProvisioningMode)),
			field.NotSupported(p, d.ProvisioningMode, vsphereProvisioningModes))
	}
	return v.errs
}
