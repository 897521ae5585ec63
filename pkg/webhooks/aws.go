package webhooks

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AWS defaults (OpenShift's).
const defaultAWSCredentialsSecret = "aws-cloud-credentials"

// awsInstanceTypes are the default instance types by control plane arch.
var awsInstanceTypes = map[string]string{archAMD64: "m5.large", archARM64: "m6g.large"}

// awsCapacityReservationID is an EC2 capacity reservation ID as OpenShift accepts it.
var awsCapacityReservationID = regexp.MustCompile(`^cr-[0-9a-f]{17}$`)

// gp3 throughput bounds (MiB/s), OpenShift's.
const (
	awsMinGP3Throughput = 125
	awsMaxGP3Throughput = 2000
)

func init() {
	register(ProviderAWS, "AWSMachineProviderConfig", []string{"awsproviderconfig.openshift.io", machinev1beta1.GroupName}, defaultAWS, validateAWS)
}

func defaultAWS(spec *machinev1beta1.AWSMachineProviderConfig, env platformEnv) []string {
	warnings := defaultInstanceType(&spec.InstanceType, ProviderAWS, env.arch, awsInstanceTypes)
	spec.Placement.Region = cmp.Or(spec.Placement.Region, env.cluster.AWSRegion)
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultAWSCredentialsSecret)
	// As OpenShift (OCPBUGS-55135): a user-data reference without a name names the default Secret.
	spec.UserDataSecret.Name = cmp.Or(spec.UserDataSecret.Name, defaultUserDataSecret)
	return warnings
}

func validateAWS(spec *machinev1beta1.AWSMachineProviderConfig, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.check(spec.AMI.ID == nil, field.Required(p.Child("ami"), "expected providerSpec.ami.id to be populated"))
	v.warn(spec.AMI.ARN != nil, "can't use providerSpec.ami.arn, only providerSpec.ami.id can be used to reference AMI")
	v.warn(spec.AMI.Filters != nil, "can't use providerSpec.ami.filters, only providerSpec.ami.id can be used to reference AMI")
	v.check(spec.Placement.Region == "",
		field.Required(p.Child("placement", "region"), "expected providerSpec.placement.region to be populated"))
	v.check(spec.InstanceType == "",
		field.Required(p.Child("instanceType"), "expected providerSpec.instanceType to be populated"))
	v.check(spec.UserDataSecret == nil,
		field.Required(p.Child("userDataSecret"), "expected providerSpec.userDataSecret to be populated"))
	v.check(spec.UserDataSecret != nil && spec.UserDataSecret.Name == "",
		field.Required(p.Child("userDataSecret", "name"), "expected providerSpec.userDataSecret.name to be provided"))
	if spec.CredentialsSecret == nil {
		v.check(true, field.Required(p.Child("credentialsSecret"), "expected providerSpec.credentialsSecret to be populated"))
	} else {
		v.add(nil, env.credentialsWarnings(env.namespace, spec.CredentialsSecret.Name))
	}
	v.warn(spec.Subnet.ARN == nil && spec.Subnet.ID == nil && spec.Subnet.Filters == nil,
		"providerSpec.subnet: No subnet has been provided. Instances may be created in an unexpected subnet and may not join the cluster.")
	v.warn(spec.Subnet.ARN != nil,
		"can't use providerSpec.subnet.arn, only providerSpec.subnet.id or providerSpec.subnet.filters can be used to reference Subnet")
	v.add(nil, awsInstanceProfileWarnings(spec.IAMInstanceProfile))
	v.add(validateAWSMarket(spec), nil)
	v.add(validateAWSThroughput(spec.BlockDevices), nil)
	v.add(validateAWSPlacement(spec.Placement, env.controlPlane), nil)
	if part := spec.PlacementGroupPartition; part != nil {
		path := p.Child("placementGroupPartition")
		v.check(*part < 1 || *part > 7, field.Invalid(path, *part, "providerSpec.placementGroupPartition must be between 1 and 7"))
		v.check(spec.PlacementGroupName == "",
			field.Invalid(path, *part, "providerSpec.placementGroupPartition is set but providerSpec.placementGroupName is empty"))
	}
	dupTags := duplicatedTagsWarning(spec.Tags)
	v.warn(dupTags != "", dupTags)
	ena, efa := machinev1beta1.AWSENANetworkInterfaceType, machinev1beta1.AWSEFANetworkInterfaceType
	v.check(!slices.Contains([]machinev1beta1.AWSNetworkInterfaceType{"", ena, efa}, spec.NetworkInterfaceType),
		field.Invalid(p.Child("networkInterfaceType"), spec.NetworkInterfaceType, fmt.Sprintf("Valid values are: %s, %s and omitted", ena, efa)))
	var optional, required machinev1beta1.MetadataServiceAuthentication = machinev1beta1.MetadataServiceAuthenticationOptional,
		machinev1beta1.MetadataServiceAuthenticationRequired
	auth := spec.MetadataServiceOptions.Authentication
	v.check(!slices.Contains([]machinev1beta1.MetadataServiceAuthentication{"", optional, required}, auth), field.Invalid(
		p.Child("metadataServiceOptions", "authentication"), auth, fmt.Sprintf("Allowed values are either '%s' or '%s'", optional, required)))
	v.add(validateAWSCPUOptions(spec.CPUOptions), nil)
	return v.errs, v.warnings
}

// awsInstanceProfileWarnings are OpenShift's warnings on the IAM instance profile reference.
func awsInstanceProfileWarnings(ref *machinev1beta1.AWSResourceReference) []string {
	if ref == nil {
		return []string{"providerSpec.iamInstanceProfile: no IAM instance profile provided: nodes may be unable to join the cluster"}
	}
	var v verdict
	v.warn(ref.ARN != nil,
		"can't use providerSpec.iamInstanceProfile.arn, only providerSpec.iamInstanceProfile.id can be used to reference IAMInstanceProfile")
	v.warn(ref.Filters != nil,
		"can't use providerSpec.iamInstanceProfile.filters, only providerSpec.iamInstanceProfile.id can be used to reference IAMInstanceProfile")
	return v.warnings
}

// duplicatedTagsWarning names each tag name given twice, in the order of its second occurrence ("": none).
func duplicatedTagsWarning(tags []machinev1beta1.TagSpecification) string {
	seen, dup := map[string]int{}, []string{}
	for _, t := range tags {
		if seen[t.Name]++; seen[t.Name] == 2 {
			dup = append(dup, t.Name)
		}
	}
	if len(dup) == 0 {
		return ""
	}
	return fmt.Sprintf("providerSpec.tags: duplicated tag names (%s): only the first value will be used.", strings.Join(dup, ","))
}

// validateAWSMarket checks the capacity reservation and the market type against the spot options, as OpenShift.
func validateAWSMarket(spec *machinev1beta1.AWSMachineProviderConfig) field.ErrorList {
	var v verdict
	idPath, typePath := providerSpecPath.Child("capacityReservationId"), providerSpecPath.Child("marketType")
	id := spec.CapacityReservationID
	v.check(id != "" && !awsCapacityReservationID.MatchString(id), field.Invalid(idPath, id, fmt.Sprintf(
		"invalid value for capacityReservationId: %q, it must start with 'cr-' and be exactly 20 characters long with 17 hexadecimal characters", id)))
	if msg := awsMarketTypeProblem(spec); msg != "" {
		v.check(true, field.Invalid(typePath, spec.MarketType, msg))
	}
	v.check(spec.MarketType == "" && spec.SpotMarketOptions != nil && id != "",
		field.Invalid(idPath, id, "spotMarketOptions and capacityReservationID may not be used together"))
	return v.errs
}

// awsMarketTypeProblem is OpenShift's first objection to a given market type ("": none).
func awsMarketTypeProblem(spec *machinev1beta1.AWSMachineProviderConfig) string {
	market, spot, reserved := spec.MarketType, spec.SpotMarketOptions != nil, spec.CapacityReservationID != ""
	onDemand, spotMarket, block := machinev1beta1.MarketTypeOnDemand, machinev1beta1.MarketTypeSpot, machinev1beta1.MarketTypeCapacityBlock
	switch {
	case market == "":
		return ""
	case market == block && spot:
		return "invalid marketType: marketType set to CapacityBlock and spotMarketOptions cannot be used together"
	case market == onDemand && spot:
		return "invalid marketType: setting marketType to OnDemand and spotMarketOptions cannot be used together"
	case market == block && !reserved:
		return "capacityReservationID is required when CapacityBlock is provided"
	case market == spotMarket && reserved:
		return "invalid marketType: marketType set to Spot and capacityReservationID may not be used together"
	case !slices.Contains([]machinev1beta1.MarketType{onDemand, spotMarket, block}, market):
		return fmt.Sprintf("invalid marketType: %s valid values are: %s, %s, %s and omitted", market, onDemand, spotMarket, block)
	}
	return ""
}

// validateAWSThroughput: an EBS throughput only on gp3 volumes, within gp3's bounds.
func validateAWSThroughput(devices []machinev1beta1.BlockDeviceMappingSpec) field.ErrorList {
	var errs field.ErrorList
	for i, d := range devices {
		// As OpenShift, a throughput without a volume type is not checked.
		if d.EBS == nil || d.EBS.VolumeType == nil || d.EBS.ThroughputMib == nil {
			continue
		}
		path, mib := providerSpecPath.Child("blockDevices").Index(i).Child("ebs", "throughputMib"), *d.EBS.ThroughputMib
		switch {
		case *d.EBS.VolumeType != "gp3":
			errs = append(errs, field.Invalid(path, mib, "only valid for gp3 volumes"))
		case mib < awsMinGP3Throughput || mib > awsMaxGP3Throughput:
			errs = append(errs, field.Invalid(path, mib, fmt.Sprintf("must be a value between %d and %d", awsMinGP3Throughput, awsMaxGP3Throughput)))
		}
	}
	return errs
}

// validateAWSCPUOptions: cpuOptions given sets something, and a known confidential compute policy.
func validateAWSCPUOptions(opts *machinev1beta1.CPUOptions) field.ErrorList {
	if opts == nil {
		return nil
	}
	// OpenShift's paths name the Go fields here.
	path := providerSpecPath.Child("CPUOptions")
	var errs field.ErrorList
	if *opts == (machinev1beta1.CPUOptions{}) {
		errs = append(errs, field.Invalid(path, "{}", "At least one field must be set if cpuOptions is provided"))
	}
	disabled, sevSNP := machinev1beta1.AWSConfidentialComputePolicyDisabled, machinev1beta1.AWSConfidentialComputePolicySEVSNP
	if cc := opts.ConfidentialCompute; cc != nil && *cc != disabled && *cc != sevSNP {
		errs = append(errs, field.Invalid(path.Child("ConfidentialCompute"), *cc, fmt.Sprintf("Allowed values are %s, %s and omitted", disabled, sevSNP)))
	}
	return errs
}
