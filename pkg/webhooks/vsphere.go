package webhooks

import (
	"fmt"
	"regexp"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// vSphere defaults and recommended minimums (OpenShift's: the vSphere
// provider's minimums and the documented disk size).
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

// defaultVSphere fills the user-data and credentials Secrets.
func defaultVSphere(spec *machinev1beta1.VSphereMachineProviderSpec, _ platformEnv) []string {
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultVSphereCredentialsSecret)
	return nil
}

func validateVSphere(spec *machinev1beta1.VSphereMachineProviderSpec, env platformEnv) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	p := providerSpecPath
	if spec.Template == "" {
		errs = append(errs, field.Required(p.Child("template"), "template must be provided"))
	}
	wsWarnings, wsErrs := validateVSphereWorkspace(spec.Workspace, p.Child("workspace"))
	warnings = append(warnings, wsWarnings...)
	errs = append(errs, wsErrs...)
	if len(spec.Network.Devices) == 0 {
		errs = append(errs, field.Required(p.Child("network", "devices"), "at least 1 network device must be provided"))
	}
	for i, d := range spec.Network.Devices {
		if d.NetworkName == "" {
			errs = append(errs, field.Required(p.Child("network", "devices").Index(i).Child("networkName"), "networkName must be provided"))
		}
	}
	if spec.NumCPUs < minVSphereCPU {
		warnings = append(warnings, fmt.Sprintf("providerSpec.numCPUs: %d is missing or less than the minimum value (%d): nodes may not boot correctly", spec.NumCPUs, minVSphereCPU))
	}
	if spec.MemoryMiB < minVSphereMemoryMiB {
		warnings = append(warnings, fmt.Sprintf("providerSpec.memoryMiB: %d is missing or less than the recommended minimum value (%d): nodes may not boot correctly", spec.MemoryMiB, minVSphereMemoryMiB))
	}
	if spec.DiskGiB < minVSphereDiskGiB {
		warnings = append(warnings, fmt.Sprintf("providerSpec.diskGiB: %d is missing or less than the recommended minimum (%d): nodes may fail to start if disk size is too low", spec.DiskGiB, minVSphereDiskGiB))
	}
	if spec.CloneMode == machinev1beta1.LinkedClone && spec.DiskGiB > 0 {
		warnings = append(warnings, fmt.Sprintf("%s clone mode is set. DiskGiB parameter will be ignored, disk size from template will be used.", machinev1beta1.LinkedClone))
	}
	errs = append(errs, validateUserDataRef(spec.UserDataSecret, p)...)
	if len(spec.TagIDs) > maxVSphereTags {
		errs = append(errs, field.Invalid(p.Child("tagIDs"), spec.TagIDs, "a maximum of 10 tags are allowed"))
	}
	for _, id := range spec.TagIDs {
		if !vsphereTagURN.MatchString(id) {
			errs = append(errs, field.Required(p.Child("tagIDs"), "tag ID must be in the format of urn:vmomi:InventoryServiceTag:<UUID>:GLOBAL"))
		}
	}
	credErrs, credWarnings := env.validateCredentialsRef(spec.CredentialsSecret, p)
	errs, warnings = append(errs, credErrs...), append(warnings, credWarnings...)
	return errs, warnings
}

// validateVSphereWorkspace requires the workspace and its server; a folder
// must be an absolute path in the datacenter's VM folder.
func validateVSphereWorkspace(ws *machinev1beta1.Workspace, path *field.Path) ([]string, field.ErrorList) {
	if ws == nil {
		return nil, field.ErrorList{field.Required(path, "workspace must be provided")}
	}
	var errs field.ErrorList
	var warnings []string
	if ws.Server == "" {
		errs = append(errs, field.Required(path.Child("server"), "server must be provided"))
	}
	if ws.Datacenter == "" {
		warnings = append(warnings, fmt.Sprintf("%s: datacenter is unset: if more than one datacenter is present, VMs cannot be created", path.Child("datacenter")))
	}
	if ws.Folder != "" {
		prefix := fmt.Sprintf("/%s/vm/", ws.Datacenter)
		if !strings.HasPrefix(ws.Folder, prefix) {
			errs = append(errs, field.Invalid(path.Child("folder"), ws.Folder, fmt.Sprintf("folder must be absolute path: expected prefix %q", prefix)))
		}
	}
	return warnings, errs
}
