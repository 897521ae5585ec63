// Package names holds the fixed names every binary shares, OpenShift's (docs/contract.md,
// docs/openshift.md). It imports nothing, so any package may import it.
package names

// Namespace and cluster-scoped singletons.
const (
	// DefaultNamespace is where the operator and its operands run.
	DefaultNamespace = "openshift-machine-api"
	// ClusterConfigName names the config.openshift.io singletons the operator reads.
	ClusterConfigName = "cluster"
	// ClusterOperatorName is the ClusterOperator the operator reports on.
	ClusterOperatorName = "machine-api"
	// KubemarkPlatformName is the External platformName of a kubemark cluster.
	KubemarkPlatformName = "kubemark"
)

// Leader-election Leases in the operand namespace: OpenShift's names, so that
// only one of each controller leads during an upgrade between the two projects.
const (
	// OperatorLeaseName is the operator's Lease.
	OperatorLeaseName = "machine-api-operator"
	// MachineSetLeaseName is the machineset-controller's Lease.
	MachineSetLeaseName = "cluster-api-provider-machineset-leader"
	// NodeLinkLeaseName is the nodelink-controller's Lease.
	NodeLinkLeaseName = "cluster-api-provider-nodelink-leader"
	// HealthCheckLeaseName is the machine-healthcheck controller's Lease.
	HealthCheckLeaseName = "cluster-api-provider-healthcheck-leader"
	// KubemarkLeaseName is the kubemark machine controller's Lease
	// (OpenShift's pattern cluster-api-provider-<provider>-leader).
	KubemarkLeaseName = "cluster-api-provider-kubemark-leader"
)

// The images ConfigMap (mounted into the operator) and its key.
const (
	ImagesConfigMapName = "machine-api-operator-images"
	ImagesConfigMapKey  = "images.json"
)

// Operand workloads.
const (
	// OperandDeploymentName runs the machineset, machine, nodelink and
	// machine-healthcheck controllers.
	OperandDeploymentName = "machine-api-controllers"
	// TerminationHandlerName names the spot-instance termination handler's
	// DaemonSet, ServiceAccount, SCC and MachineHealthCheck.
	TerminationHandlerName = "machine-api-termination-handler"
)

// Webhooks, their Services and serving certificates.
const (
	// WebhookServiceName fronts the machineset-controller's webhook server;
	// WebhookCertSecretName holds its serving certificate.
	WebhookServiceName    = "machine-api-operator-webhook"
	WebhookCertSecretName = "machine-api-operator-webhook-cert"
	// MachineWebhookServiceName and MachineWebhookCertSecretName: the same
	// for the machine-controller's webhook port.
	MachineWebhookServiceName    = "machine-api-operator-machine-webhook"
	MachineWebhookCertSecretName = "machine-api-operator-machine-webhook-cert"
	// WebhookConfigurationName names the Validating and MutatingWebhookConfiguration.
	WebhookConfigurationName = "machine-api"
	// Metal3RemediationWebhookConfigurationName names those of the BareMetal
	// provider's metal3 remediation webhooks.
	Metal3RemediationWebhookConfigurationName = "machine-api-metal3-remediation"
	// WebhookCertDir is where the webhook serving certificate is mounted.
	WebhookCertDir = "/etc/machine-api-operator/tls"
	// WebhookPort is the machineset-controller's webhook port.
	WebhookPort = 8443
)

// OpenShift's network operator injects the trusted CA bundle into
// TrustedCAConfigMapName, key TrustedCAKey.
const (
	TrustedCAConfigMapName = "mao-trusted-ca"
	TrustedCAKey           = "ca-bundle.crt"
)

// Ownership of what the operator applies.
const (
	// ManagedByLabel (value ManagedByValue) marks every object the operator
	// applies; pruning selects by it and the installation's namespace label.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "machine-api-operator"
	// FieldManager is the operator's server-side apply field manager.
	FieldManager = "machine-api-operator"
)
