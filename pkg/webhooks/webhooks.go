// Package webhooks serves the Machine, MachineSet and MachineDeployment admission webhooks, with OpenShift's
// defaults, rules and messages per platform (one file each); see docs/contract.md and docs/machinedeployment.md.
package webhooks

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// Paths the handlers are served on, which the operator's webhook configurations name.
const (
	MutateMachinePath      = "/mutate-machine-openshift-io-v1beta1-machine"
	ValidateMachinePath    = "/validate-machine-openshift-io-v1beta1-machine"
	MutateMachineSetPath   = "/mutate-machine-openshift-io-v1beta1-machineset"
	ValidateMachineSetPath = "/validate-machine-openshift-io-v1beta1-machineset"
	// MachineDeployment is this project's addition (OpenShift has none).
	MutateMachineDeploymentPath   = "/mutate-machine-openshift-io-v1beta1-machinedeployment"
	ValidateMachineDeploymentPath = "/validate-machine-openshift-io-v1beta1-machinedeployment"
)

// Webhook names, the values of the "webhook" metric label.
const (
	WebhookMutateMachine             = "mutate-machine"
	WebhookValidateMachine           = "validate-machine"
	WebhookMutateMachineSet          = "mutate-machineset"
	WebhookValidateMachineSet        = "validate-machineset"
	WebhookMutateMachineDeployment   = "mutate-machinedeployment"
	WebhookValidateMachineDeployment = "validate-machinedeployment"
)

// The machineset-controller's webhook port and mounted serving certificate.
const (
	DefaultPort    = names.WebhookPort
	DefaultCertDir = names.WebhookCertDir
)

// DefaultLookupTimeout bounds the Infrastructure read of one request.
const DefaultLookupTimeout = 3 * time.Second

// Options configure the handlers.
type Options struct {
	// Reader reads the Infrastructure and DNS "cluster" and Secrets' metadata
	// (the manager's cached client); nil: handled without cluster facts.
	Reader client.Reader
	// LookupTimeout bounds each read (0: DefaultLookupTimeout); a failed read
	// is a warning, the request handled without cluster facts.
	LookupTimeout time.Duration
	// MachineNamespace is the machine controller's (its --namespace): a Machine created
	// there, of the cluster's provider, gets the controller's finalizer. "": none does.
	MachineNamespace string
	// VSphereHostVMGroupZonal is the feature gate of that name (--feature-gates, as the
	// operator passes it to the vSphere provider too): without it a workspace.vmGroup is refused.
	VSphereHostVMGroupZonal bool
}

// SetupWithManager registers the handlers on mgr's webhook server.
func SetupWithManager(mgr manager.Manager, opts Options) error {
	Register(mgr.GetWebhookServer(), opts)
	return nil
}

// Register registers the handlers on srv (once: a path twice panics) and the metrics.
func Register(srv webhook.Server, opts Options) {
	RegisterMetrics()
	for path, h := range Handlers(opts) {
		srv.Register(path, &webhook.Admission{Handler: h})
	}
}

// Handlers returns the admission handlers by path.
func Handlers(opts Options) map[string]admission.Handler {
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = DefaultLookupTimeout
	}
	return map[string]admission.Handler{
		MutateMachinePath:             &handler{name: WebhookMutateMachine, opts: opts, handle: mutate("Machine", false, defaultMachineEdits)},
		ValidateMachinePath:           &handler{name: WebhookValidateMachine, opts: opts, handle: validate("Machine", ValidateMachine, ValidateMachineUpdate)},
		MutateMachineSetPath:          &handler{name: WebhookMutateMachineSet, opts: opts, handle: mutate("MachineSet", false, defaultMachineSetEdits)},
		ValidateMachineSetPath:        &handler{name: WebhookValidateMachineSet, opts: opts, handle: validate("MachineSet", ValidateMachineSet, ValidateMachineSetUpdate)},
		MutateMachineDeploymentPath:   &handler{name: WebhookMutateMachineDeployment, opts: opts, handle: mutate(mdv1beta1.Kind, true, defaultMachineDeploymentEdits)},
		ValidateMachineDeploymentPath: &handler{name: WebhookValidateMachineDeployment, opts: opts, handle: validate(mdv1beta1.Kind, ValidateMachineDeployment, ValidateMachineDeploymentUpdate)},
	}
}

// Values of the "result" label of RequestsTotal.
const (
	ResultAllowed = "allowed" // admitted unchanged
	ResultDenied  = "denied"  // refused by a check
	ResultPatched = "patched" // admitted with defaults added
	ResultError   = "error"   // the request could not be handled (undecodable object)
)

var (
	// RequestsTotal counts admission requests by webhook, operation and result.
	RequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_webhook_requests_total",
		Help: "Admission requests handled by the Machine API webhooks, by webhook, operation and result (allowed, denied, patched, error).",
	}, []string{"webhook", "operation", "result"})

	// DenialsTotal counts refused requests by webhook.
	DenialsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machine_api_webhook_denials_total",
		Help: "Admission requests refused by the Machine API webhooks, by webhook.",
	}, []string{"webhook"})
)

// RegisterMetrics registers the webhook metrics (again is fine).
func RegisterMetrics() {
	mapimetrics.Register(RequestsTotal, DenialsTotal)
}
