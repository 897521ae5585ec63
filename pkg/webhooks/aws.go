package webhooks

import (
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AWS defaults (OpenShift's).
const defaultAWSCredentialsSecret = "aws-cloud-credentials"

// awsInstanceTypes are the default instance types by control plane arch.
var awsInstanceTypes = map[string]string{archAMD64: "m5.large", archARM64: "m6g.large"}

func init() {
	register(ProviderAWS, "AWSMachineProviderConfig", []string{"awsproviderconfig.openshift.io", machinev1beta1.GroupName}, defaultAWS, validateAWS)
}

// defaultAWS fills the instance type (by arch), the region (the cluster's)
// and the user-data and credentials Secrets.
func defaultAWS(spec *machinev1beta1.AWSMachineProviderConfig, env platformEnv) []string {
	var warnings []string
	if spec.InstanceType == "" {
		var w string
		spec.InstanceType, w = defaultInstanceType(ProviderAWS, env.arch, awsInstanceTypes)
		warnings = append(warnings, w)
	}
	if spec.Placement.Region == "" {
		spec.Placement.Region = env.cluster.AWSRegion
	}
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultAWSCredentialsSecret)
	return warnings
}

// validateAWS refuses what the AWS provider cannot create and warns about
// what makes nodes unlikely to join.
func validateAWS(spec *machinev1beta1.AWSMachineProviderConfig, env platformEnv) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warnings []string
	p := providerSpecPath
	if spec.AMI.ID == nil {
		errs = append(errs, field.Required(p.Child("ami"), "expected providerSpec.ami.id to be populated"))
	}
	if spec.AMI.ARN != nil {
		warnings = append(warnings, "can't use providerSpec.ami.arn, only providerSpec.ami.id can be used to reference AMI")
	}
	if spec.AMI.Filters != nil {
		warnings = append(warnings, "can't use providerSpec.ami.filters, only providerSpec.ami.id can be used to reference AMI")
	}
	if spec.Placement.Region == "" {
		errs = append(errs, field.Required(p.Child("placement", "region"), "expected providerSpec.placement.region to be populated"))
	}
	if spec.InstanceType == "" {
		errs = append(errs, field.Required(p.Child("instanceType"), "expected providerSpec.instanceType to be populated"))
	}
	if spec.UserDataSecret == nil {
		errs = append(errs, field.Required(p.Child("userDataSecret"), "expected providerSpec.userDataSecret to be populated"))
	}
	if spec.CredentialsSecret == nil {
		errs = append(errs, field.Required(p.Child("credentialsSecret"), "expected providerSpec.credentialsSecret to be populated"))
	} else {
		warnings = append(warnings, env.credentialsWarnings(env.namespace, spec.CredentialsSecret.Name)...)
	}
	if spec.Subnet.ARN == nil && spec.Subnet.ID == nil && spec.Subnet.Filters == nil {
		warnings = append(warnings, "providerSpec.subnet: No subnet has been provided. Instances may be created in an unexpected subnet and may not join the cluster.")
	}
	if spec.IAMInstanceProfile == nil {
		warnings = append(warnings, "providerSpec.iamInstanceProfile: no IAM instance profile provided: nodes may be unable to join the cluster")
	}
	switch spec.Placement.Tenancy {
	case "", machinev1beta1.DefaultTenancy, machinev1beta1.DedicatedTenancy, machinev1beta1.HostTenancy:
	default:
		// OpenShift names the field providerSpec.tenancy (not placement.tenancy).
		errs = append(errs, field.Invalid(p.Child("tenancy"), spec.Placement.Tenancy,
			fmt.Sprintf("Invalid providerSpec.tenancy, the only allowed options are: %s, %s, %s",
				machinev1beta1.DefaultTenancy, machinev1beta1.DedicatedTenancy, machinev1beta1.HostTenancy)))
	}
	if dup := duplicatedAWSTags(spec.Tags); len(dup) > 0 {
		warnings = append(warnings, fmt.Sprintf("providerSpec.tags: duplicated tag names (%s): only the first value will be used.", strings.Join(dup, ",")))
	}
	switch spec.NetworkInterfaceType {
	case "", machinev1beta1.AWSENANetworkInterfaceType, machinev1beta1.AWSEFANetworkInterfaceType:
	default:
		errs = append(errs, field.Invalid(p.Child("networkInterfaceType"), spec.NetworkInterfaceType,
			fmt.Sprintf("Valid values are: %s, %s and omitted", machinev1beta1.AWSENANetworkInterfaceType, machinev1beta1.AWSEFANetworkInterfaceType)))
	}
	switch spec.MetadataServiceOptions.Authentication {
	case "", machinev1beta1.MetadataServiceAuthenticationOptional, machinev1beta1.MetadataServiceAuthenticationRequired:
	default:
		errs = append(errs, field.Invalid(p.Child("metadataServiceOptions", "authentication"), spec.MetadataServiceOptions.Authentication,
			fmt.Sprintf("Allowed values are either '%s' or '%s'", machinev1beta1.MetadataServiceAuthenticationOptional, machinev1beta1.MetadataServiceAuthenticationRequired)))
	}
	return errs, warnings
}

// duplicatedAWSTags returns each tag name given more than once, once, in
// the order of its second occurrence.
func duplicatedAWSTags(tags []machinev1beta1.TagSpecification) []string {
	seen := map[string]int{}
	var dup []string
	for _, t := range tags {
		if seen[t.Name]++; seen[t.Name] == 2 {
			dup = append(dup, t.Name)
		}
	}
	return dup
}
