package webhooks

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// Provider names a machine provider whose providerSpec this package admits.
type Provider string

// The providers: unknown (left alone), kubemark, and the platforms, named after their type.
const (
	ProviderUnknown  Provider = ""
	ProviderKubemark Provider = "kubemark"
	ProviderAWS      Provider = Provider(configv1.AWSPlatformType)
	ProviderAzure    Provider = Provider(configv1.AzurePlatformType)
	ProviderGCP      Provider = Provider(configv1.GCPPlatformType)
	ProviderVSphere  Provider = Provider(configv1.VSpherePlatformType)
	ProviderPowerVS  Provider = Provider(configv1.PowerVSPlatformType)
	ProviderNutanix  Provider = Provider(configv1.NutanixPlatformType)
)

// ClusterInfo is what admission needs to know about the cluster (the zero
// value: no cluster-ID label default, provider chosen by providerSpec only).
type ClusterInfo struct {
	// Provider serves a providerSpec.value naming neither apiVersion nor kind.
	Provider Provider
	// InfrastructureName is the cluster-ID label's default ("": none) and the platforms' defaults' base.
	InfrastructureName string
	// AWSRegion (status.platformStatus.aws.region) defaults placement.region.
	AWSRegion string
	// AzureGovCloud: an Azure cloudName other than AzurePublicCloud (spot VMs warned about).
	AzureGovCloud bool
	// DNSDisconnected: the DNS has no public zone, so an Azure public IP is refused.
	DNSDisconnected bool
	// MachineNamespace is Options.MachineNamespace: only a Machine created there gets its finalizer.
	MachineNamespace string
	// VSphereHostVMGroupZonal is Options.VSphereHostVMGroupZonal: a vSphere workspace.vmGroup is allowed.
	VSphereHostVMGroupZonal bool
}

// ClusterInfoFromInfrastructure derives the ClusterInfo of infra (nil: the zero value).
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
	if _, ok := platforms[Provider(platform)]; ok {
		info.Provider = Provider(platform)
	}
	ext := infra.Spec.PlatformSpec.External
	if platform == configv1.ExternalPlatformType && ext != nil && ext.PlatformName == names.KubemarkPlatformName {
		info.Provider = ProviderKubemark
	}
	if ps != nil && ps.AWS != nil {
		info.AWSRegion = ps.AWS.Region
	}
	// As OpenShift: an Azure status without a cloudName counts as not public.
	info.AzureGovCloud = ps != nil && ps.Azure != nil && ps.Azure.CloudName != configv1.AzurePublicCloud
	return info
}

// lookupClusterInfo reads the Infrastructure (on Azure the DNS too); missing: the zero value.
func lookupClusterInfo(ctx context.Context, r client.Reader) (ClusterInfo, error) {
	if r == nil {
		return ClusterInfo{}, nil
	}
	infra := &configv1.Infrastructure{}
	if found, err := getOptional(ctx, r, infra, "infrastructures"); err != nil || !found {
		return ClusterInfo{}, err
	}
	info := ClusterInfoFromInfrastructure(infra)
	if info.Provider == ProviderAzure {
		dns := &configv1.DNS{}
		found, err := getOptional(ctx, r, dns, "dnses")
		if err != nil {
			return ClusterInfo{}, err
		}
		info.DNSDisconnected = found && dns.Spec.PublicZone == nil
	}
	return info, nil
}

// getOptional reads the config.openshift.io object "cluster"; not found when it or its API is missing.
func getOptional(ctx context.Context, r client.Reader, obj client.Object, resource string) (found bool, err error) {
	err = r.Get(ctx, client.ObjectKey{Name: names.ClusterConfigName}, obj)
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return err == nil, nil
	}
	return false, fmt.Errorf("reading %s.config.openshift.io %q: %w", resource, names.ClusterConfigName, err)
}
