package webhooks

import (
	"fmt"
	"regexp"
	"strings"

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
)

// vsphereTagURN is a vSphere tag ID: urn:vmomi:InventoryServiceTag:<UUID>:<scope>.
var vsphereTagURN = regexp.MustCompile(`^(urn):(vmomi):(InventoryServiceTag):([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):([^:]+)$`)

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
	if ws, wsPath := spec.Workspace, p.Child("workspace"); ws == nil {
		v.check(true, field.Required(wsPath, "workspace must be provided"))
	} else {
		v.check(ws.Server == "", field.Required(wsPath.Child("server"), "server must be provided"))
		v.warn(ws.Datacenter == "",
			fmt.Sprintf("%s: datacenter is unset: if more than one datacenter is present, VMs cannot be created", wsPath.Child("datacenter")))
		// A folder is an absolute path in the datacenter's VM folder.
		prefix := fmt.Sprintf("/%s/vm/", ws.Datacenter)
		v.check(ws.Folder != "" && !strings.HasPrefix(ws.Folder, prefix),
			field.Invalid(wsPath.Child("folder"), ws.Folder, fmt.Sprintf("folder must be absolute path: expected prefix %q", prefix)))
	}
	devices := p.Child("network", "devices")
	v.check(len(spec.Network.Devices) == 0, field.Required(devices, "at least 1 network device must be provided"))
	for i, d := range spec.Network.Devices {
		v.check(d.NetworkName == "", field.Required(devices.Index(i).Child("networkName"), "networkName must be provided"))
	}
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
	return v.errs, v.warnings
}
