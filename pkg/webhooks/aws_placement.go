package webhooks

import (
	"fmt"
	"regexp"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// awsDedicatedHostID is a dedicated host ID as OpenShift accepts it.
var awsDedicatedHostID = regexp.MustCompile(`^h-([0-9a-f]{8}|[0-9a-f]{17})$`)

// awsMaxHostTags is the most tags a dynamically allocated host may get (OpenShift's, the API's MaxItems).
const awsMaxHostTags = 50

// OpenShift's field paths for the host placement rules: spec.placement..., not providerSpec.placement...
var (
	awsHostPath          = field.NewPath("spec", "placement", "host")
	awsHostAffinityPath  = awsHostPath.Child("affinity")
	awsDedicatedHostPath = awsHostPath.Child("dedicatedHost")
	awsHostIDPath        = awsDedicatedHostPath.Child("id")
	awsHostDynamicPath   = awsDedicatedHostPath.Child("dynamicHostAllocation")
	awsHostTagsPath      = awsHostDynamicPath.Child("tags")
)

// validateAWSPlacement checks the tenancy with the host placement, as OpenShift: a host placement only
// with host tenancy, which a control plane Machine may not use.
func validateAWSPlacement(placement machinev1beta1.Placement, controlPlane bool) field.ErrorList {
	def, dedicated, host := machinev1beta1.DefaultTenancy, machinev1beta1.DedicatedTenancy, machinev1beta1.HostTenancy
	switch placement.Tenancy {
	case "", def, dedicated:
		if placement.Host != nil {
			return field.ErrorList{field.Forbidden(awsHostPath, "host may only be specified when tenancy is 'host'")}
		}
		return nil
	case host:
		if controlPlane {
			return field.ErrorList{field.Forbidden(field.NewPath("spec", "placement", "tenancy"), "dedicated host tenancy is not supported for control plane machines")}
		}
		return validateAWSHostPlacement(placement.Host)
	}
	// OpenShift names the field providerSpec.tenancy (not placement.tenancy).
	return field.ErrorList{field.Invalid(providerSpecPath.Child("tenancy"), placement.Tenancy,
		fmt.Sprintf("Invalid providerSpec.tenancy, the only allowed options are: %s, %s, %s, or omitted", def, dedicated, host))}
}

// validateAWSHostPlacement checks a host tenancy's placement: an affinity, and the dedicated host it needs.
func validateAWSHostPlacement(hp *machinev1beta1.HostPlacement) field.ErrorList {
	if hp == nil {
		return nil
	}
	if hp.Affinity == nil {
		return field.ErrorList{field.Required(awsHostAffinityPath, "affinity is required and must be set to either AnyAvailable or DedicatedHost")}
	}
	switch *hp.Affinity {
	case machinev1beta1.HostAffinityAnyAvailable:
		var errs field.ErrorList
		if hp.DedicatedHost != nil && awsAllocationStrategy(hp.DedicatedHost) == machinev1beta1.AllocationStrategyDynamic {
			errs = append(errs, field.Forbidden(awsHostAffinityPath, "hostAffinity must be DedicatedHost when using dynamic host allocation"))
		}
		return append(errs, validateAWSDedicatedHost(hp.DedicatedHost)...)
	case machinev1beta1.HostAffinityDedicatedHost:
		if hp.DedicatedHost == nil {
			return field.ErrorList{field.Required(awsDedicatedHostPath, "dedicatedHost is required when hostAffinity is DedicatedHost, and optional otherwise")}
		}
		return validateAWSDedicatedHost(hp.DedicatedHost)
	}
	return field.ErrorList{field.Invalid(awsHostAffinityPath, *hp.Affinity, "hostAffinity must be either AnyAvailable or DedicatedHost")}
}

// awsAllocationStrategy is the host's strategy, UserProvided when not given.
func awsAllocationStrategy(h *machinev1beta1.DedicatedHost) machinev1beta1.AllocationStrategy {
	if h.AllocationStrategy == nil {
		return machinev1beta1.AllocationStrategyUserProvided
	}
	return *h.AllocationStrategy
}

// validateAWSDedicatedHost: a user-provided host is named by a valid ID, a dynamic one is not, and only
// a dynamic one has allocation settings (1 to 50 tags).
func validateAWSDedicatedHost(h *machinev1beta1.DedicatedHost) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	switch strategy := awsAllocationStrategy(h); strategy {
	case machinev1beta1.AllocationStrategyUserProvided, "": // "" as OpenShift: written before the field had values
		const idRule = "must start with 'h-' followed by 8 or 17 lowercase hexadecimal characters (0-9 and a-f)"
		if h.ID == "" {
			errs = append(errs, field.Required(awsHostIDPath, "id is required when allocationStrategy is UserProvided and "+idRule))
		} else if !awsDedicatedHostID.MatchString(h.ID) {
			errs = append(errs, field.Invalid(awsHostIDPath, h.ID, "id "+idRule))
		}
		if h.DynamicHostAllocation != nil {
			// OpenShift reports the host ID as the bad value.
			errs = append(errs, field.Invalid(awsHostDynamicPath, h.ID, "dynamicHostAllocation is only allowed when allocationStrategy is Dynamic"))
		}
	case machinev1beta1.AllocationStrategyDynamic:
		if h.ID != "" {
			errs = append(errs, field.Forbidden(awsHostIDPath, "id is only allowed when allocationStrategy is Provided"))
		}
		errs = append(errs, validateAWSHostTags(h.DynamicHostAllocation)...)
	default:
		errs = append(errs, field.Invalid(awsDedicatedHostPath.Child("allocationStrategy"), strategy,
			fmt.Sprintf("Invalid allocationStrategy, the only allowed options are: %s, %s",
				machinev1beta1.AllocationStrategyUserProvided, machinev1beta1.AllocationStrategyDynamic)))
	}
	return errs
}

// validateAWSHostTags: dynamic host allocation settings, when given, have 1 to 50 tags.
func validateAWSHostTags(dha *machinev1beta1.DynamicHostAllocationSpec) field.ErrorList {
	switch {
	case dha == nil:
		return nil
	case dha.Tags == nil:
		return field.ErrorList{field.Required(awsHostTagsPath, "at least one property must be specified in dynamicHostAllocation")}
	case len(*dha.Tags) < 1:
		return field.ErrorList{field.Invalid(awsHostTagsPath, len(*dha.Tags), "at least 1 tag must be specified")}
	case len(*dha.Tags) > awsMaxHostTags:
		return field.ErrorList{field.Invalid(awsHostTagsPath, len(*dha.Tags), fmt.Sprintf("maximum %d tags can be specified", awsMaxHostTags))}
	}
	return nil
}

// Labels OpenShift reads to tell a control plane Machine.
const (
	machineRoleLabel = "machine.openshift.io/cluster-api-machine-role"
	machineTypeLabel = "machine.openshift.io/cluster-api-machine-type"
)

// isControlPlaneMachine: OpenShift's test, the role or type label "master".
func isControlPlaneMachine(labels map[string]string) bool {
	return labels[machineRoleLabel] == "master" || labels[machineTypeLabel] == "master"
}
