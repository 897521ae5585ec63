package webhooks

import (
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

// defaultPowerVS fills the Secrets, system type s922, Shared processors
// (0.5; 1 when Dedicated) and 32 GiB of memory.
func defaultPowerVS(spec *machinev1.PowerVSMachineProviderConfig, _ platformEnv) []string {
	if spec.UserDataSecret == nil {
		spec.UserDataSecret = &machinev1.PowerVSSecretReference{Name: defaultUserDataSecret}
	}
	if spec.CredentialsSecret == nil {
		spec.CredentialsSecret = &machinev1.PowerVSSecretReference{Name: defaultPowerVSCredentialsSecret}
	}
	if spec.SystemType == "" {
		spec.SystemType = defaultPowerVSSystemType
	}
	if spec.ProcessorType == "" {
		spec.ProcessorType = machinev1.PowerVSProcessorTypeShared
	}
	if spec.Processors.IntVal == 0 && spec.Processors.StrVal == "" {
		if spec.ProcessorType == machinev1.PowerVSProcessorTypeDedicated {
			spec.Processors = intstr.FromInt32(1)
		} else {
			spec.Processors = intstr.FromString("0.5")
		}
	}
	if spec.MemoryGiB == 0 {
		spec.MemoryGiB = defaultPowerVSMemoryGiB
	}
	return nil
}

func validatePowerVS(spec *machinev1.PowerVSMachineProviderConfig, env platformEnv) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	p := providerSpecPath
	if spec.KeyPairName == "" {
		errs = append(errs, field.Required(p.Child("keyPairName"), "providerSpec.keyPairName must be provided"))
	}
	errs = append(errs, validatePowerVSResource(spec.ServiceInstance, "serviceInstance", p.Child("serviceInstance"))...)
	errs = append(errs, validatePowerVSResource(spec.Image, "image", p.Child("image"))...)
	errs = append(errs, validatePowerVSResource(spec.Network, "network", p.Child("network"))...)
	if spec.UserDataSecret == nil {
		errs = append(errs, field.Required(p.Child("userDataSecret"), "providerSpec.userDataSecret must be provided"))
	} else if spec.UserDataSecret.Name == "" {
		errs = append(errs, field.Required(p.Child("userDataSecret", "name"), "providerSpec.userDataSecret.name must be provided"))
	}
	if spec.CredentialsSecret == nil {
		errs = append(errs, field.Required(p.Child("credentialsSecret"), "providerSpec.credentialsSecret must be provided"))
	} else if spec.CredentialsSecret.Name == "" {
		errs = append(errs, field.Required(p.Child("credentialsSecret", "name"), "providerSpec.credentialsSecret.name must be provided"))
	} else {
		warnings = append(warnings, env.credentialsWarnings(env.namespace, spec.CredentialsSecret.Name)...)
	}
	sizeWarnings, sizeErrs := validatePowerVSSize(spec, p)
	return append(errs, sizeErrs...), append(warnings, sizeWarnings...)
}

// validatePowerVSResource checks a resource reference of kind resource
// (serviceInstance, image, network): its type and the matching value;
// RegEx is for networks only.
func validatePowerVSResource(r machinev1.PowerVSResource, resource string, path *field.Path) field.ErrorList {
	id, name, regex := machinev1.PowerVSResourceTypeID, machinev1.PowerVSResourceTypeName, machinev1.PowerVSResourceTypeRegEx
	var errs field.ErrorList
	switch r.Type {
	case id:
		if r.ID == nil {
			errs = append(errs, field.Required(path.Child("id"), fmt.Sprintf("%s identifier is specified as ID but the value is nil", resource)))
		}
	case name:
		if r.Name == nil {
			errs = append(errs, field.Required(path.Child("name"), fmt.Sprintf("%s identifier is specified as Name but the value is nil", resource)))
		}
	case regex:
		if resource != "network" {
			errs = append(errs, field.Invalid(path, r.Type,
				fmt.Sprintf("%s identifier is specified as %s but only %s and %s are valid resource identifiers", resource, r.Type, id, name)))
		}
		if r.RegEx == nil {
			errs = append(errs, field.Required(path.Child("regex"), fmt.Sprintf("%s identifier is specified as Regex but the value is nil", resource)))
		}
	case "":
		errs = append(errs, field.Required(path, fmt.Sprintf("%s identifier must be provided", resource)))
	default:
		errs = append(errs, field.Invalid(path, r.Type,
			fmt.Sprintf("%s identifier is specified as %s but only %s, %s and %s are valid resource identifiers", resource, r.Type, id, name, regex)))
	}
	return errs
}

// validatePowerVSSize checks memory and processors against the system
// type's limits: above the maximum or negative is refused, below the
// minimum warned about. An unknown system type is only warned about.
func validatePowerVSSize(spec *machinev1.PowerVSMachineProviderConfig, path *field.Path) ([]string, field.ErrorList) {
	sys, ok := powerVSSystems[spec.SystemType]
	if !ok {
		return []string{fmt.Sprintf("providerSpec.SystemType: %s is not known, Currently known system types are %s, %s and %s", spec.SystemType, "s922", "e980", "e880")}, nil
	}
	var errs field.ErrorList
	var warnings []string
	if spec.MemoryGiB > sys.maxMemoryGiB {
		errs = append(errs, field.Invalid(path.Child("memoryGiB"), spec.MemoryGiB, fmt.Sprintf("for %s systemtype the maximum supported memory value is %d", spec.SystemType, sys.maxMemoryGiB)))
	}
	if spec.MemoryGiB < 0 {
		errs = append(errs, field.Invalid(path.Child("memoryGiB"), spec.MemoryGiB, "memory value cannot be negative"))
	} else if spec.MemoryGiB < sys.minMemoryGiB {
		warnings = append(warnings, fmt.Sprintf("providerspec.MemoryGiB %d is less than the minimum value %d", spec.MemoryGiB, sys.minMemoryGiB))
	}
	processors, err := powerVSProcessors(spec.Processors)
	if err != nil {
		// OpenShift's message, typo included.
		return warnings, append(errs, field.InternalError(path.Child("processor"), fmt.Errorf("error while getting processor vlaue %w", err)))
	}
	if processors > sys.maxProcessor {
		errs = append(errs, field.Invalid(path.Child("processor"), processors, fmt.Sprintf("for %s systemtype the maximum supported processor value is %f", spec.SystemType, sys.maxProcessor)))
	}
	minimum := sys.minProcessorShared
	if spec.ProcessorType == machinev1.PowerVSProcessorTypeDedicated {
		minimum = sys.minProcessorDedicated
	}
	switch {
	case processors < 0:
		errs = append(errs, field.Invalid(path.Child("processor"), processors, "processor value cannot be negative"))
	case processors < minimum:
		warnings = append(warnings, fmt.Sprintf("providerspec.Processor %f is less than the minimum value %f for providerSpec.ProcessorType: %s", processors, minimum, spec.ProcessorType))
	}
	return warnings, errs
}

// powerVSProcessors is the processor count, a number or a decimal string.
func powerVSProcessors(p intstr.IntOrString) (float64, error) {
	if p.Type == intstr.Int {
		return float64(p.IntVal), nil
	}
	n, err := strconv.ParseFloat(p.StrVal, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to convert Processors %s to float64", p.StrVal)
	}
	return n, nil
}
