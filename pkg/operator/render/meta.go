package render

import (
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// The operand's ServiceAccounts, roles and bindings are not rendered: they
// ship statically in install/ (09_serviceaccount.yaml, 09_controllers-rbac.yaml),
// so that the operator needs no RBAC write (docs/openshift.md#rbac).

const machineGroup = "machine.openshift.io"

const nodeMaintenanceGroup = "nodemaintenance.medik8s.io"

// kubemarkPlatform: the External platform named kubemark.
func kubemarkPlatform(cfg config.Config) bool {
	return cfg.PlatformType == configv1.ExternalPlatformType && cfg.ExternalPlatformName == config.KubemarkPlatformName
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// objectMeta: the common labels plus labels; namespace "" is cluster-scoped.
func objectMeta(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: withCommonLabels(labels)}
}
