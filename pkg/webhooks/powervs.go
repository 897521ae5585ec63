package webhooks

import (
	"cmp"
	"fmt"
	"strconv"

	machinev1 "github.com/openshift/api/machine/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PowerVS defaults (OpenShift's).
const (
	defaultPowerVSCredentialsSecret = "powervs-credentials"
	defaultPowerVSSystemType        = "s922"
	defaultPowerVSMemoryGiB         = 32
)

// powerVSSystem are the limits of a Power VS system type.
type powerVSSystem struct {
	minMemoryGiB, maxMemoryGiB                int32
	minProcessorShared, minProcessorDedicated float64
	maxProcessor                              float64
}

// powerVSSystems are the known system types and their limits.
var powerVSSystems = map[string]powerVSSystem{
	"s922": {minMemoryGiB: 32, maxMemoryGiB: 942, minProcessorShared: 0.5, minProcessorDedicated: 1, maxProcessor: 15},
	"e880": {minMemoryGiB: 32, maxMemoryGiB: 7463, minProcessorShared: 0.5, minProcessorDedicated: 1, maxProcessor: 143},
	"e980": {minMemoryGiB: 32, maxMemoryGiB: 15307, minProcessorShared: 0.5, minProcessorDedicated: 1, maxProcessor: 143},
}

func init() {
	// OpenShift does not check the apiVersion and kind of PowerVS values.
	register(ProviderPowerVS, "PowerVSMachineProviderConfig", nil, defaultPowerVS, validatePowerVS)
}

func defaultPowerVS(spec *machinev1.PowerVSMachineProviderConfig, _ platformEnv) []string {
	defaultPtr(&spec.UserDataSecret, machinev1.PowerVSSecretReference{Name: defaultUserDataSecret})
	defaultPtr(&spec.CredentialsSecret, machinev1.PowerVSSecretReference{Name: defaultPowerVSCredentialsSecret})
	spec.SystemType = cmp.Or(spec.SystemType, defaultPowerVSSystemType)
	spec.ProcessorType = cmp.Or(spec.ProcessorType, machinev1.PowerVSProcessorTypeShared)
	if spec.Processors.IntVal == 0 && spec.Processors.StrVal == "" {
		if spec.ProcessorType == machinev1.PowerVSProcessorTypeDedicated {
			spec.Processors = intstr.FromInt32(1)
		} else {
			spec.Processors = intstr.FromString("0.5")
		}
	}
	spec.MemoryGiB = cmp.Or(spec.MemoryGiB, defaultPowerVSMemoryGiB)
	return nil
}

func validatePowerVS(spec *machinev1.PowerVSMachineProviderConfig, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.check(spec.KeyPairName == "", field.Required(p.Child("keyPairName"), "providerSpec.keyPairName must be provided"))
	v.add(validatePowerVSResource(spec.ServiceInstance, "serviceInstance", p.Child("serviceInstance")), nil)
	v.add(validatePowerVSResource(spec.Image, "image", p.Child("image")), nil)
	v.add(validatePowerVSResource(spec.Network, "network", p.Child("network")), nil)
	if spec.UserDataSecret == nil {
		v.check(true, field.Required(p.Child("userDataSecret"), "providerSpec.userDataSecret must be provided"))
	} else {
		v.check(spec.UserDataSecret.Name == "",
			field.Required(p.Child("userDataSecret", "name"), "providerSpec.userDataSecret.name must be provided"))
	}
	switch c := spec.CredentialsSecret; {
	case c == nil:
		v.check(true, field.Required(p.Child("credentialsSecret"), "providerSpec.credentialsSecret must be provided"))
	case c.Name == "":
		v.check(true,
			field.Required(p.Child("credentialsSecret", "name"), "providerSpec.credentialsSecret.name must be provided"))
	default:
		v.add(nil, env.credentialsWarnings(env.namespace, c.Name))
	}
	v.add(validatePowerVSSize(spec, p))
	return v.errs, v.warnings
}

// validatePowerVSResource checks a reference's type and value (RegEx for networks only).
func validatePowerVSResource(r machinev1.PowerVSResource, resource string, path *field.Path) field.ErrorList {
	id, name, regex := machinev1.PowerVSResourceTypeID, machinev1.PowerVSResourceTypeName, machinev1.PowerVSResourceTypeRegEx
	var v verdict
	switch r.Type {
	case id:
		v.check(r.ID == nil,
			field.Required(path.Child("id"), fmt.Sprintf("%s identifier is specified as ID but the value is nil", resource)))
	case name:
		v.check(r.Name == nil,
			field.Required(path.Child("name"), fmt.Sprintf("%s identifier is specified as Name but the value is nil", resource)))
	case regex:
		v.check(resource != "network", field.Invalid(path, r.Type,
			fmt.Sprintf("%s identifier is specified as %s but only %s and %s are valid resource identifiers", resource, r.Type, id, name)))
		v.check(r.RegEx == nil,
			field.Required(path.Child("regex"), fmt.Sprintf("%s identifier is specified as Regex but the value is nil", resource)))
	case "":
		v.check(true, field.Required(path, fmt.Sprintf("%s identifier must be provided", resource)))
	default:
		v.check(true, field.Invalid(path, r.Type,
			fmt.Sprintf("%s identifier is specified as %s but only %s, %s and %s are valid resource identifiers", resource, r.Type, id, name, regex)))
	}
	return v.errs
}

// validatePowerVSSize refuses memory and processors above the system type's
// maximum or negative, and warns below its minimum or of an unknown type.
func validatePowerVSSize(spec *machinev1.PowerVSMachineProviderConfig, path *field.Path) (field.ErrorList, []string) {
	sys, ok := powerVSSystems[spec.SystemType]
	if !ok {
		return nil, []string{fmt.Sprintf("providerSpec.SystemType: %s is not known, Currently known system types are %s, %s and %s", spec.SystemType, "s922", "e980", "e880")}
	}
	var v verdict
	memory, mem := spec.MemoryGiB, path.Child("memoryGiB")
	v.check(memory > sys.maxMemoryGiB,
		field.Invalid(mem, memory, fmt.Sprintf("for %s systemtype the maximum supported memory value is %d", spec.SystemType, sys.maxMemoryGiB)))
	v.check(memory < 0, field.Invalid(mem, memory, "memory value cannot be negative"))
	v.warn(memory >= 0 && memory < sys.minMemoryGiB,
		fmt.Sprintf("providerspec.MemoryGiB %d is less than the minimum value %d", memory, sys.minMemoryGiB))
	processors, err := float64(spec.Processors.IntVal), error(nil)
	if spec.Processors.Type == intstr.String {
		processors, err = strconv.ParseFloat(spec.Processors.StrVal, 64)
	}
	if err != nil {
		// OpenShift's message, typo included.
		v.check(true, field.InternalError(path.Child("processor"),
			fmt.Errorf("error while getting processor vlaue failed to convert Processors %s to float64", spec.Processors.StrVal)))
		return v.errs, v.warnings
	}
	v.check(processors > sys.maxProcessor, field.Invalid(path.Child("processor"), processors,
		fmt.Sprintf("for %s systemtype the maximum supported processor value is %f", spec.SystemType, sys.maxProcessor)))
	minimum := sys.minProcessorShared
	if spec.ProcessorType == machinev1.PowerVSProcessorTypeDedicated {
		minimum = sys.minProcessorDedicated
	}
	v.check(processors < 0, field.Invalid(path.Child("processor"), processors, "processor value cannot be negative"))
	v.warn(processors >= 0 && processors < minimum,
		fmt.Sprintf("providerspec.Processor %f is less than the minimum value %f for providerSpec.ProcessorType: %s", processors, minimum, spec.ProcessorType))
	return v.errs, v.warnings
}
