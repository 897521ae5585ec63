package render

import (
	configv1 "github.com/openshift/api/config/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Least privilege: the ClusterRole only what is cluster-scoped or drained in
// every namespace; Leases only in the operand namespace; no "*".

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

const machineGroup = "machine.openshift.io"

const nodeMaintenanceGroup = "nodemaintenance.medik8s.io"

func clusterRole(cfg config.Config) *rbacv1.ClusterRole {
	role := &rbacv1.ClusterRole{
		TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "ClusterRole"),
		ObjectMeta: objectMeta("", ControllersServiceAccountName, nil),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
			// drain (kubectl's helper gets a pod's DaemonSet to skip it)
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
			{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: readVerbs},
			// the admission webhooks default by platform (Azure: by DNS)
			{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures", "dnses"}, Verbs: readVerbs},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// metrics authentication and authorization
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
	if kubemarkPlatform(cfg) {
		// Only the kubemark provider registers Nodes (kubelets register real ones).
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"create"}})
	}
	if cfg.MachineHealthCheckEnabled {
		// The NodeMaintenance controller (it drains with the rules above).
		role.Rules = append(role.Rules,
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances/status"}, Verbs: []string{"get", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances/finalizers"}, Verbs: []string{"update"}},
		)
	}
	return role
}

// kubemarkPlatform: the External platform named kubemark.
func kubemarkPlatform(cfg config.Config) bool {
	return cfg.PlatformType == configv1.ExternalPlatformType && cfg.ExternalPlatformName == config.KubemarkPlatformName
}

func role(cfg config.Config) *rbacv1.Role {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{machineGroup}, Resources: []string{"machines", "machinesets", "machinedeployments"}, Verbs: writeVerbs},
		{APIGroups: []string{machineGroup}, Resources: []string{"machines/status", "machinesets/status", "machinedeployments/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{machineGroup}, Resources: []string{"machines/finalizers", "machinesets/finalizers", "machinedeployments/finalizers"}, Verbs: []string{"update"}},
	}
	if cfg.MachineHealthCheckEnabled {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{machineGroup}, Resources: []string{"machinehealthchecks"}, Verbs: readVerbs},
			rbacv1.PolicyRule{APIGroups: []string{machineGroup}, Resources: []string{"machinehealthchecks/status"}, Verbs: []string{"get", "update", "patch"}},
		)
	}
	// Provider credentials and user data: ours read them, a provider image
	// gets what OpenShift grants it.
	configVerbs := readVerbs
	if !providerIsOurs(cfg) {
		configVerbs = writeVerbs
	}
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: configVerbs},
	)
	if cfg.PlatformType == configv1.BareMetalPlatformType {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts/status", "baremetalhosts/finalizers"}, Verbs: []string{"update"}},
		)
	}
	return &rbacv1.Role{
		TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "Role"),
		ObjectMeta: objectMeta(cfg.Namespace, ControllersServiceAccountName, nil),
		Rules:      rules,
	}
}

func controllersSubjects(cfg config.Config) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ControllersServiceAccountName, Namespace: cfg.Namespace}}
}

func clusterRoleBinding(cfg config.Config) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
		ObjectMeta: objectMeta("", ControllersServiceAccountName, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ControllersServiceAccountName},
		Subjects:   controllersSubjects(cfg),
	}
}

func roleBinding(cfg config.Config) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
		ObjectMeta: objectMeta(cfg.Namespace, ControllersServiceAccountName, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ControllersServiceAccountName},
		Subjects:   controllersSubjects(cfg),
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// objectMeta: the common labels plus labels; namespace "" is cluster-scoped.
func objectMeta(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: withCommonLabels(labels)}
}
