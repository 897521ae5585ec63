package webhooks

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Provider names a machine provider whose providerSpec this package defaults
// and validates.
type Provider string

const (
	// ProviderUnknown is a provider this package knows nothing about: its
	// providerSpec is left alone.
	ProviderUnknown Provider = ""
	// ProviderKubemark is the built-in kubemark provider
	// (kubemark.machine-api-operator.io/v1alpha1 KubemarkMachineProviderSpec).
	ProviderKubemark Provider = "kubemark"
	// The platforms whose providerSpec OpenShift's webhooks default and
	// validate, named after their Infrastructure platform type.
	ProviderAWS     Provider = Provider(configv1.AWSPlatformType)
	ProviderAzure   Provider = Provider(configv1.AzurePlatformType)
	ProviderGCP     Provider = Provider(configv1.GCPPlatformType)
	ProviderVSphere Provider = Provider(configv1.VSpherePlatformType)
	ProviderPowerVS Provider = Provider(configv1.PowerVSPlatformType)
	ProviderNutanix Provider = Provider(configv1.NutanixPlatformType)
)

// ClusterInfo is what admission needs to know about the cluster, taken from
// the config.openshift.io/v1 Infrastructure named "cluster" (and, on Azure,
// the DNS named "cluster"). The zero value (no Infrastructure) means: no
// cluster-ID label default and provider selection by providerSpec group only.
type ClusterInfo struct {
	// Provider serves Machines whose providerSpec.value names neither an
	// apiVersion nor a kind.
	Provider Provider
	// InfrastructureName is the value defaulted into the cluster-ID label
	// and the base of the platforms' network and image defaults; empty
	// means the label is not defaulted.
	InfrastructureName string
	// AWSRegion (status.platformStatus.aws.region) is the default of an AWS
	// providerSpec's placement.region.
	AWSRegion string
	// AzureGovCloud is true when status.platformStatus.azure is set with a
	// cloudName other than AzurePublicCloud: spot VMs get a warning there.
	AzureGovCloud bool
	// DNSDisconnected is true when the DNS "cluster" has no public zone
	// (publish strategy Internal): an Azure public IP is refused. Read only
	// on Azure; false when the DNS object cannot be found.
	DNSDisconnected bool
}

// platformProviders maps the Infrastructure platform types this package
// admits to their provider.
var platformProviders = map[configv1.PlatformType]Provider{
	configv1.AWSPlatformType:     ProviderAWS,
	configv1.AzurePlatformType:   ProviderAzure,
	configv1.GCPPlatformType:     ProviderGCP,
	configv1.VSpherePlatformType: ProviderVSphere,
	configv1.PowerVSPlatformType: ProviderPowerVS,
	configv1.NutanixPlatformType: ProviderNutanix,
}

// ClusterInfoFromInfrastructure derives the ClusterInfo of infra (nil: the
// zero value). The platform type is status.platformStatus.type, or
// spec.platformSpec.type while the status is not filled in; External with
// spec.platformSpec.external.platformName "kubemark" is the kubemark
// provider (the Infrastructure status carries no platform name).
func ClusterInfoFromInfrastructure(infra *configv1.Infrastructure) ClusterInfo {
	if infra == nil {
		return ClusterInfo{}
	}
	info := ClusterInfo{InfrastructureName: infra.Status.InfrastructureName}
	platform := infra.Spec.PlatformSpec.Type
	ps := infra.Status.PlatformStatus
	if ps != nil && ps.Type != "" {
		platform = ps.Type
	}
	info.Provider = platformProviders[platform]
	if platform == configv1.ExternalPlatformType {
		if ext := infra.Spec.PlatformSpec.External; ext != nil && ext.PlatformName == config.KubemarkPlatformName {
			info.Provider = ProviderKubemark
		}
	}
	if ps != nil && ps.AWS != nil {
		info.AWSRegion = ps.AWS.Region
	}
	// As OpenShift: an Azure status without a cloudName counts as not public.
	info.AzureGovCloud = ps != nil && ps.Azure != nil && ps.Azure.CloudName != configv1.AzurePublicCloud
	return info
}

// lookupClusterInfo reads the Infrastructure "cluster" through r, and on
// Azure the DNS "cluster". A nil reader, a missing object or a cluster
// without the config.openshift.io API give the zero value and no error.
func lookupClusterInfo(ctx context.Context, r client.Reader) (ClusterInfo, error) {
	if r == nil {
		return ClusterInfo{}, nil
	}
	infra := &configv1.Infrastructure{}
	if found, err := getOptional(ctx, r, infra); err != nil || !found {
		return ClusterInfo{}, err
	}
	info := ClusterInfoFromInfrastructure(infra)
	if info.Provider == ProviderAzure {
		dns := &configv1.DNS{}
		found, err := getOptional(ctx, r, dns)
		if err != nil {
			return ClusterInfo{}, err
		}
		info.DNSDisconnected = found && dns.Spec.PublicZone == nil
	}
	return info, nil
}

// getOptional reads the config.openshift.io object named "cluster" into obj;
// found is false when it or its API does not exist.
func getOptional(ctx context.Context, r client.Reader, obj client.Object) (found bool, err error) {
	err = r.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false, nil
	default:
		resource := "infrastructures.config.openshift.io"
		if _, ok := obj.(*configv1.DNS); ok {
			resource = "dnses.config.openshift.io"
		}
		return false, fmt.Errorf("reading %s %q: %w", resource, config.ClusterConfigName, err)
	}
}
