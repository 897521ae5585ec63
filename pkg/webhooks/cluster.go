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
)

// ClusterInfo is what admission needs to know about the cluster, taken from
// the config.openshift.io/v1 Infrastructure named "cluster". The zero value
// (no Infrastructure) means: no cluster-ID label default and provider
// selection by providerSpec group only.
type ClusterInfo struct {
	// Provider serves Machines whose providerSpec.value names neither an
	// apiVersion nor a kind.
	Provider Provider
	// InfrastructureName is the value defaulted into the cluster-ID label;
	// empty means the label is not defaulted.
	InfrastructureName string
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
	if ps := infra.Status.PlatformStatus; ps != nil && ps.Type != "" {
		platform = ps.Type
	}
	if platform == configv1.ExternalPlatformType {
		if ext := infra.Spec.PlatformSpec.External; ext != nil && ext.PlatformName == config.KubemarkPlatformName {
			info.Provider = ProviderKubemark
		}
	}
	return info
}

// lookupClusterInfo reads the Infrastructure "cluster" through r. A nil
// reader, a missing Infrastructure or a cluster without the
// config.openshift.io API give the zero ClusterInfo and no error.
func lookupClusterInfo(ctx context.Context, r client.Reader) (ClusterInfo, error) {
	if r == nil {
		return ClusterInfo{}, nil
	}
	infra := &configv1.Infrastructure{}
	err := r.Get(ctx, client.ObjectKey{Name: config.ClusterConfigName}, infra)
	switch {
	case err == nil:
		return ClusterInfoFromInfrastructure(infra), nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return ClusterInfo{}, nil
	default:
		return ClusterInfo{}, fmt.Errorf("reading infrastructures.config.openshift.io %q: %w", config.ClusterConfigName, err)
	}
}
