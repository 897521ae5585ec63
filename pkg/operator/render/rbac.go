package render

import (
	configv1 "github.com/openshift/api/config/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// Least-privilege RBAC for the operands, which all run as the service account
// machine-api-controllers and are started with --namespace, so they only read
// and write Machine API objects in that namespace: those permissions are in
// the Role. The ClusterRole holds only what is cluster-scoped (nodes,
// NodeMaintenances) or must be reached in every namespace (draining a node:
// its pods, their PodDisruptionBudgets and DaemonSets; events recorded for
// nodes go to the "default" namespace), and never a write a provider image
// could turn against the cluster's own leaders: Leases are granted only in
// the operand namespace (leader election, the Role) and in the NodeMaintenance
// lease namespace (a Role the install ships with that namespace,
// install/0000_30_machine-api-operator_09_lease-rbac.yaml). No rule uses "*".

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
			// machine controller: labels, deletes and cordons nodes;
			// nodelink: links and syncs labels/taints; MHC: reads. Only this
			// project's kubemark provider registers Nodes (see below).
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
			// machine controller drain.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
			// (kubectl's drain helper gets a pod's DaemonSet to skip it.)
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
			{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: readVerbs},
			// the admission webhooks (machineset-controller) default by the
			// cluster's platform and infrastructure name; on Azure they read
			// the DNS (no public zone: no public IPs).
			{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures", "dnses"}, Verbs: readVerbs},
			// every controller records events (client-go's recorders create
			// an event, then patch its count or series).
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// every controller's metrics endpoint authenticates the scraper
			// (TokenReview) and authorizes GET /metrics (SubjectAccessReview)
			// with the API server.
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
	if kubemarkPlatform(cfg) {
		// The kubemark provider registers a Node per Machine (kubelets
		// register real ones): neither a provider image nor this project's
		// vSphere provider (whose VMs' kubelets register) creates Nodes.
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"create"}})
	}
	if cfg.MachineHealthCheckEnabled {
		// The NodeMaintenance controller (machine-healthcheck container):
		// cluster-scoped NodeMaintenances; it drains with the rules above.
		// Its node leases are in the lease namespace (see above).
		role.Rules = append(role.Rules,
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances/status"}, Verbs: []string{"get", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{nodeMaintenanceGroup}, Resources: []string{"nodemaintenances/finalizers"}, Verbs: []string{"update"}},
		)
	}
	return role
}

// kubemarkPlatform: the cluster's Machines are kubemark's (External
// platform named kubemark).
func kubemarkPlatform(cfg config.Config) bool {
	return cfg.PlatformType == configv1.ExternalPlatformType && cfg.ExternalPlatformName == config.KubemarkPlatformName
}

func role(cfg config.Config) *rbacv1.Role {
	rules := []rbacv1.PolicyRule{
		// machineset controller: full CRUD on machines and machinesets; machine
		// controller and nodelink update machines; the machinedeployment
		// controller manages its MachineSets and writes its status (the
		// safety controller too: Frozen). All need status and finalizers
		// (ownerReferences with blockOwnerDeletion).
		{APIGroups: []string{machineGroup}, Resources: []string{"machines", "machinesets", "machinedeployments"}, Verbs: writeVerbs},
		{APIGroups: []string{machineGroup}, Resources: []string{"machines/status", "machinesets/status", "machinedeployments/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{machineGroup}, Resources: []string{"machines/finalizers", "machinesets/finalizers", "machinedeployments/finalizers"}, Verbs: []string{"update"}},
	}
	if cfg.MachineHealthCheckEnabled {
		rules = append(rules,
			// The MHC controller writes only their status.
			rbacv1.PolicyRule{APIGroups: []string{machineGroup}, Resources: []string{"machinehealthchecks"}, Verbs: readVerbs},
			rbacv1.PolicyRule{APIGroups: []string{machineGroup}, Resources: []string{"machinehealthchecks/status"}, Verbs: []string{"get", "update", "patch"}},
		)
	}
	// Provider credentials, user data and configuration: read by this
	// project's providers (vSphere: the credentials and userData Secrets;
	// its cloud-provider-config in openshift-config is granted by the
	// payload's operand Role there); a platform provider image gets what
	// OpenShift grants it (it may write them, e.g. to store generated
	// credentials).
	configVerbs := readVerbs
	if !providerIsOurs(cfg) {
		configVerbs = writeVerbs
	}
	rules = append(rules,
		// leader election of every operand (client-go's Lease lock reads,
		// creates and renews; provider images name their own Leases).
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: configVerbs},
	)
	if cfg.PlatformType == configv1.BareMetalPlatformType {
		// The BareMetal provider provisions Machines on metal3 BareMetalHosts.
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

// objectMeta is the metadata of a rendered object: the common labels plus
// extra ones. namespace is "" for cluster-scoped objects.
func objectMeta(namespace, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: withCommonLabels(labels)}
}
