package webhooks

import (
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// Paths the handlers are served on; the operator's webhook configurations
// (pkg/operator/render) point at them through the Service
// machine-api-operator-webhook (port 443 → container port 8443).
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

// Serving settings of the machineset-controller container the operator
// renders: the webhook-server port and the mounted serving certificate
// (the Secret machine-api-operator-webhook-cert).
const (
	DefaultPort    = names.WebhookPort
	DefaultCertDir = names.WebhookCertDir
	CertName       = "tls.crt"
	KeyName        = "tls.key"
)

// DefaultLookupTimeout bounds the Infrastructure read of one request.
const DefaultLookupTimeout = 3 * time.Second

// ServerOptions returns the webhook.Options of the machineset-controller's
// webhook server: port 8443, certificate and key in
// /etc/machine-api-operator/tls. controller-runtime's certificate watcher
// reloads rotated files without a restart.
func ServerOptions() webhook.Options {
	return webhook.Options{Port: DefaultPort, CertDir: DefaultCertDir, CertName: CertName, KeyName: KeyName}
}

// Options configure the handlers.
type Options struct {
	// Reader reads the config.openshift.io/v1 Infrastructure named "cluster"
	// (the binary passes the manager's cached client; this needs get, list
	// and watch on infrastructures.config.openshift.io). Nil: no platform
	// lookup, so no cluster-ID label default and provider selection by
	// providerSpec apiVersion/kind only.
	Reader client.Reader
	// LookupTimeout bounds the Infrastructure read per request;
	// 0 means DefaultLookupTimeout. When the read fails the request is
	// handled as without a Reader, with a warning.
	LookupTimeout time.Duration
}

// SetupWithManager registers the handlers on mgr's webhook server
// (configure it with ServerOptions). The server starts with the manager.
func SetupWithManager(mgr manager.Manager, opts Options) error {
	srv := mgr.GetWebhookServer()
	if srv == nil {
		return errors.New("webhooks: the manager has no webhook server")
	}
	Register(srv, opts)
	return nil
}

// Register registers the handlers on srv and the metrics with
// controller-runtime's registry. Registering twice on one server panics
// (http.ServeMux refuses duplicate paths).
func Register(srv webhook.Server, opts Options) {
	RegisterMetrics()
	for path, h := range Handlers(opts) {
		srv.Register(path, &webhook.Admission{Handler: h})
	}
}

// Handlers returns the admission handlers by path. Each one counts its
// requests in RequestsTotal and DenialsTotal.
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
