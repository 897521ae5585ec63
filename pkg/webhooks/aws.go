package webhooks

import (
	"cmp"
	"fmt"
	"slices"
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

func defaultAWS(spec *machinev1beta1.AWSMachineProviderConfig, env platformEnv) []string {
	warnings := defaultInstanceType(&spec.InstanceType, ProviderAWS, env.arch, awsInstanceTypes)
	spec.Placement.Region = cmp.Or(spec.Placement.Region, env.cluster.AWSRegion)
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultAWSCredentialsSecret)
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
	if spec.CredentialsSecret == nil {
		v.check(true, field.Required(p.Child("credentialsSecret"), "expected providerSpec.credentialsSecret to be populated"))
	} else {
		v.add(nil, env.credentialsWarnings(env.namespace, spec.CredentialsSecret.Name))
	}
	v.warn(spec.Subnet.ARN == nil && spec.Subnet.ID == nil && spec.Subnet.Filters == nil,
		"providerSpec.subnet: No subnet has been provided. Instances may be created in an unexpected subnet and may not join the cluster.")
	v.warn(spec.IAMInstanceProfile == nil,
		"providerSpec.iamInstanceProfile: no IAM instance profile provided: nodes may be unable to join the cluster")
	tenancies := []machinev1beta1.InstanceTenancy{machinev1beta1.DefaultTenancy, machinev1beta1.DedicatedTenancy, machinev1beta1.HostTenancy}
	// OpenShift names the field providerSpec.tenancy (not placement.tenancy).
	v.check(spec.Placement.Tenancy != "" && !slices.Contains(tenancies, spec.Placement.Tenancy), field.Invalid(p.Child("tenancy"),
		spec.Placement.Tenancy, fmt.Sprintf("Invalid providerSpec.tenancy, the only allowed options are: %s, %s, %s", tenancies[0], tenancies[1], tenancies[2])))
	seen, dup := map[string]int{}, []string{} // each name given twice, in the order of its second occurrence
	for _, t := range spec.Tags {
		if seen[t.Name]++; seen[t.Name] == 2 {
			dup = append(dup, t.Name)
		}
	}
	v.warn(len(dup) > 0,
		fmt.Sprintf("providerSpec.tags: duplicated tag names (%s): only the first value will be used.", strings.Join(dup, ",")))
	ena, efa := machinev1beta1.AWSENANetworkInterfaceType, machinev1beta1.AWSEFANetworkInterfaceType
	v.check(!slices.Contains([]machinev1beta1.AWSNetworkInterfaceType{"", ena, efa}, spec.NetworkInterfaceType),
		field.Invalid(p.Child("networkInterfaceType"), spec.NetworkInterfaceType, fmt.Sprintf("Valid values are: %s, %s and omitted", ena, efa)))
	var optional, required machinev1beta1.MetadataServiceAuthentication = machinev1beta1.MetadataServiceAuthenticationOptional,
		machinev1beta1.MetadataServiceAuthenticationRequired
	auth := spec.MetadataServiceOptions.Authentication
	v.check(!slices.Contains([]machinev1beta1.MetadataServiceAuthentication{"", optional, required}, auth), field.Invalid(
		p.Child("metadataServiceOptions", "authentication"), auth, fmt.Sprintf("Allowed values are either '%s' or '%s'", optional, required)))
	return v.errs, v.warnings
}
