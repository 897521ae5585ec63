// Package names holds the fixed names every binary of this project shares:
// the namespace, leader-election leases, and the objects (Services, Secrets,
// ConfigMaps, ...) the operator renders and the operands use. Where OpenShift's
// Machine API already has a name, it is that name (docs/contract.md lists them,
// docs/openshift.md the few that differ).
//
// It is a leaf: it imports nothing, so the operator, every operand and the
// tests may import it without pulling in each other's dependencies.
package names

// Namespace and cluster-scoped singletons.
const (
	// DefaultNamespace is where the operator and its operands run
	// (overridden by NamespaceEnv).
	DefaultNamespace = "openshift-machine-api"
	// NamespaceEnv names the environment variable that overrides
	// DefaultNamespace, as on OpenShift.
	NamespaceEnv = "COMPONENT_NAMESPACE"
	// ClusterConfigName names the config.openshift.io singletons the operator
	// reads (Infrastructure, Proxy, FeatureGate, APIServer, ClusterVersion).
	ClusterConfigName = "cluster"
	// ClusterOperatorName is the ClusterOperator the operator reports on.
	ClusterOperatorName = "machine-api"
	// KubemarkPlatformName is the External platform name
	// (spec.platformSpec.external.platformName) of a kubemark cluster.
	KubemarkPlatformName = "kubemark"
)

// Leader-election Leases, all in the operand namespace. The operand names are
// OpenShift's, so that during a rolling upgrade between the two projects'
// binaries only one of each controller leads.
const (
	// OperatorLeaseName is the operator's Lease.
	OperatorLeaseName = "machine-api-operator"
	// MachineSetLeaseName is the machineset-controller's Lease.
	MachineSetLeaseName = "cluster-api-provider-machineset-leader"
	// NodeLinkLeaseName is the nodelink-controller's Lease.
	NodeLinkLeaseName = "cluster-api-provider-nodelink-leader"
	// HealthCheckLeaseName is the machine-healthcheck controller's Lease.
	HealthCheckLeaseName = "cluster-api-provider-healthcheck-leader"
	// KubemarkLeaseName is the Lease of this project's machine controller
	// (the built-in kubemark provider); every provider has its own, after
	// OpenShift's pattern cluster-api-provider-<provider>-leader.
	KubemarkLeaseName = "cluster-api-provider-kubemark-leader"
)

// The images ConfigMap (mounted into the operator).
const (
	ImagesConfigMapName = "machine-api-operator-images"
	ImagesConfigMapKey  = "images.json"
)

// Operand workloads.
const (
	// OperandDeploymentName runs the machineset, machine, nodelink and
	// machine-healthcheck controllers.
	OperandDeploymentName = "machine-api-controllers"
	// ControllersServiceAccountName runs OperandDeploymentName; its RBAC
	// objects have the same name.
	ControllersServiceAccountName = "machine-api-controllers"
	// TerminationHandlerName is the DaemonSet (and its ServiceAccount, SCC
	// and MachineHealthCheck) of the spot-instance termination handler.
	TerminationHandlerName = "machine-api-termination-handler"
)

// Webhooks, their Services and serving certificates.
const (
	// WebhookServiceName fronts the machineset-controller webhook server;
	// WebhookCertSecretName holds its serving certificate.
	WebhookServiceName    = "machine-api-operator-webhook"
	WebhookCertSecretName = "machine-api-operator-webhook-cert"
	// MachineWebhookServiceName and MachineWebhookCertSecretName: the same
	// for the machine-controller's webhook port.
	MachineWebhookServiceName    = "machine-api-operator-machine-webhook"
	MachineWebhookCertSecretName = "machine-api-operator-machine-webhook-cert"
	// WebhookConfigurationName names the Validating and
	// MutatingWebhookConfiguration.
	WebhookConfigurationName = "machine-api"
	// Metal3RemediationWebhookConfigurationName names the Validating and
	// MutatingWebhookConfiguration of the metal3 remediation webhooks the
	// BareMetal provider serves (BareMetal only).
	Metal3RemediationWebhookConfigurationName = "machine-api-metal3-remediation"
	// WebhookCertDir is where the webhook serving certificate is mounted
	// (tls.crt, tls.key).
	WebhookCertDir = "/etc/machine-api-operator/tls"
	// WebhookPort is the machineset-controller's webhook port;
	// MachineWebhookPort the machine-controller's.
	WebhookPort        = 8443
	MachineWebhookPort = 8440
)

// Metrics.
const (
	// ControllersServiceName is the Service of the operand's metrics ports.
	ControllersServiceName = "machine-api-controllers"
	// ControllersMetricsCertSecretName holds the metrics serving certificate
	// OpenShift's service-ca issues for ControllersServiceName;
	// MetricsCertDir is where it is mounted.
	ControllersMetricsCertSecretName = "machine-api-controllers-tls"
	MetricsCertDir                   = "/etc/tls/private"
)

// OpenShift integration.
const (
	// TrustedCAConfigMapName is the ConfigMap OpenShift's network operator
	// injects the cluster's trusted CA bundle into (key TrustedCAKey).
	TrustedCAConfigMapName = "mao-trusted-ca"
	TrustedCAKey           = "ca-bundle.crt"
)

// Ownership of what the operator applies.
const (
	// ManagedByLabel marks every object the operator applies, with value
	// ManagedByValue; pruning finds obsolete objects by it and nothing else.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "machine-api-operator"
	// FieldManager is the operator's server-side apply field manager.
	FieldManager = "machine-api-operator"
)
