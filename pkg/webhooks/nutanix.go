package webhooks

import (
	"encoding/json"
	"fmt"
	"slices"

	machinev1 "github.com/openshift/api/machine/v1"
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
	// The platform supports one subnet per VM.
	if n := len(spec.Subnets); n != 1 {
		subnets, _ := json.Marshal(spec.Subnets)
		detail := "missing subnets: nodes may fail to start if no subnets are configured"
		if n > 1 {
			detail = "too many subnets: currently nutanix platform supports one subnet per VM but more than one subnets are configured"
		}
		v.check(true, field.Invalid(p.Child("subnets"), string(subnets), detail))
	}
	for _, s := range spec.Subnets {
		v.add(validateNutanixIdentifier("subnet", s), nil)
	}
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
	return v.errs, v.warnings
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
