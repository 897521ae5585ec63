// Package operator is the operator's sync loop: observe the inputs (images.json,
// Infrastructure, Proxy, FeatureGate) → build one immutable config → render →
// apply and prune → observe the operand → report on the ClusterOperator.
//
// Every input and every owned object is watched and mapped to a single work
// item, so a change anywhere is handled within seconds, and a steady state
// makes no write requests (apply skips objects that already match, status
// writes only real changes).
package operator

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/status"
	"github.com/machine-api-operator/machine-api-operator/pkg/tlsflags"
)

// Options configure the Operator.
type Options struct {
	// Namespace the operands run in.
	Namespace string
	// ImagesJSONPath is the images.json file (mounted from the images ConfigMap).
	ImagesJSONPath string
	// ReleaseVersion is reported in status.versions; may be empty.
	ReleaseVersion string
	// Certificates says who issues the webhook serving certificates
	// (default: auto-detect service-ca at every sync).
	Certificates WebhookCertificates
	// ServiceCA forces Certificates to CertificatesServiceCA (kept for
	// callers written before Certificates).
	ServiceCA bool
	// StableDuration / DegradedAfter: see status.Options.
	StableDuration time.Duration
	DegradedAfter  time.Duration
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
	// MetricsTLS, when set, is the operator's own metrics server's TLS
	// settings: every sync sets it to the cluster's TLS profile, so a new
	// profile applies to the next scrape, as it does to the operand. Nil
	// when the TLS flags fixed them.
	MetricsTLS *tlsflags.Live
}

// CertIssuer issues the webhook serving certificates when service-ca is absent.
type CertIssuer interface {
	// Ensure returns the CA bundle to inject and when to check again.
	Ensure(ctx context.Context) (caBundle []byte, nextCheck time.Time, err error)
	// Retire deletes the Secrets Ensure wrote, so that service-ca (which
	// refuses to overwrite a Secret it did not create) can issue its own.
	Retire(ctx context.Context) error
}

// Operator reconciles the Machine API of a cluster. Create it with New.
type Operator struct {
	opts    Options
	reader  client.Reader
	applier *apply.Applier
	certs   CertIssuer
	status  *status.Writer

	// imagesDigest is the digest of images.json as the last sync read it;
	// the file watcher compares the file against it (see fileWatcher).
	imagesDigest atomic.Pointer[string]

	// failingSince is when the current streak of failed syncs began (zero
	// when the last sync succeeded); it drives the Degraded grace period.
	failingSince time.Time
	// lastGood is the last config built without input errors; it describes
	// the operand while an input is bad.
	lastGood config.Config
	// operandMissingSince is when the operand Deployment was first seen
	// missing, so an absent Deployment also counts towards Degraded.
	operandMissingSince time.Time

	// apis follows the CRD-backed kinds the cluster serves (set up by
	// setupWithManager).
	apis *apiTracker
	// certsRetired: the operator's own webhook certificates were deleted
	// since service-ca took over (reset when the operator issues again).
	certsRetired bool
	// reported remembers the last logged or recorded facts, so each change
	// is logged (and recorded as an event) once, not at every sync.
	reported reportedFacts
}

// New returns an Operator. reader should be the informer cache; c is used for
// writes. certs may be nil when opts.ServiceCA is true.
func New(opts Options, c client.Client, reader client.Reader, certs CertIssuer, recorder status.Recorder) *Operator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Namespace == "" {
		opts.Namespace = config.DefaultNamespace
	}
	return &Operator{
		opts:    opts,
		reader:  reader,
		applier: apply.New(apply.Options{Client: c, Reader: reader, FieldManager: config.FieldManager, Owner: opts.Namespace}),
		certs:   certs,
		status:  &status.Writer{Client: c, Reader: reader, Recorder: recorder, Name: config.ClusterOperatorName},
	}
}

// Request is the single work item: every event maps to it.
var Request = reconcile.Request{NamespacedName: types.NamespacedName{Name: config.ClusterOperatorName}}

// PrunableKinds are the kinds the operator deletes when a config change makes
// an object of theirs obsolete. CRDs are deliberately absent: deleting a CRD
// deletes every Machine.
var PrunableKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	rbacv1.SchemeGroupVersion.WithKind("Role"),
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
}

// Reconcile runs one sync. It returns an error only for failures worth a
// rate-limited retry; timers (stable duration, grace periods, certificate
// rotation) come back as RequeueAfter.
func (o *Operator) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	now := o.opts.Now()

	// Observe the inputs and decide the config. On bad input the operand is
	// left exactly as it is and the last good config describes it.
	var failure *status.Failure
	var retryErr error
	var requeue time.Duration
	var applied []apply.ObjectRef
	operandUnknown := false
	served, err := o.apis.observe(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	in, cfg, err := o.observeConfig(ctx, served)
	switch {
	case err != nil && config.ReasonOf(err) != "":
		failure = &status.Failure{Reason: config.ReasonOf(err), Message: err.Error(), Immediate: true}
		logger.Error(err, "Bad operator input; leaving the operand as it is", "reason", failure.Reason)
		cfg = o.lastGood
		operandUnknown = cfg.PlatformType == ""
		// The API (CRDs) does not depend on the bad input: a first install
		// gets it before the Infrastructure exists.
		if err := o.installCRDs(ctx, config.ForCRDs(in)); err != nil {
			retryErr = err
		}
	case err != nil:
		failure = &status.Failure{Reason: status.ReasonSyncFailed, Message: err.Error()}
		retryErr = err
		cfg = o.lastGood
		operandUnknown = cfg.PlatformType == ""
	default:
		o.followTLSProfile(ctx, cfg.TLS)
		// Act: certificates, render, apply, prune.
		var res apply.Result
		res, requeue, err = o.sync(ctx, cfg)
		applied = res.Applied
		switch {
		case err != nil:
			failure = &status.Failure{Reason: status.ReasonSyncFailed,
				Message: fmt.Sprintf("Failed to sync the Machine API for %s: %v", cfg.Describe(), err)}
			retryErr = err
		default:
			o.lastGood = cfg
		}
		// CRDs another component installs, missing: the Machine API is not
		// served until they come (their CRD watch brings the next sync).
		if msg := missingMessage(served.missing(cfg.OpenShift), cfg.OpenShift); msg != "" && failure == nil {
			failure = &status.Failure{Reason: ReasonMissingCRDs, Message: msg}
		}
	}
	if failure == nil {
		o.failingSince = time.Time{}
	} else if o.failingSince.IsZero() {
		o.failingSince = now
	}

	// Observe the operand and report.
	obs := status.Observation{
		Now:            now,
		ReleaseVersion: o.opts.ReleaseVersion,
		NoOp:           cfg.NoOp,
		Failure:        failure,
		FailingSince:   o.failingSince,
		OperandUnknown: operandUnknown,
	}
	if cfg.PlatformType != "" {
		obs.Change = cfg.Describe()
	}
	if !cfg.RendersOperand() {
		o.operandMissingSince = time.Time{}
	}
	if cfg.RendersOperand() && !obs.OperandUnknown {
		operand, err := o.observeOperand(ctx, cfg, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		// The cache may still hold the workloads as they were before this
		// sync's apply; their update event brings the next sync.
		if w := appliedWorkload(applied); w != "" {
			operand.RolledOut = false
			operand.Message = joinMsg(w+": new spec applied, waiting for the rollout", operand.Message)
		}
		obs.Operand = operand
	}
	obs.Notes = notes(cfg)
	timer, err := o.report(ctx, obs, served, cfg)
	if err != nil {
		return reconcile.Result{}, err
	}
	if retryErr != nil {
		// API errors: retry with the controller's rate-limited backoff
		// (capped, see SetupWithManager).
		logger.Error(retryErr, "Sync failed; retrying")
		return reconcile.Result{}, retryErr
	}
	// Input errors wait for the input to change (every input is watched);
	// timers bring the sync back when a grace period or stable duration ends.
	return reconcile.Result{RequeueAfter: minPositive(requeue, timer)}, nil
}

// followTLSProfile gives the operator's metrics server the cluster's TLS
// profile (when it follows the profile at all).
func (o *Operator) followTLSProfile(ctx context.Context, p config.TLSProfile) {
	if o.opts.MetricsTLS == nil {
		return
	}
	changed, err := o.opts.MetricsTLS.Set(p.Options())
	switch {
	case err != nil:
		// The profile resolver only yields names Go knows; keep the
		// current settings if that ever breaks.
		log.FromContext(ctx).Error(err, "Keeping the metrics server's TLS settings")
	case changed:
		log.FromContext(ctx).Info("Metrics server follows the cluster's TLS profile", "minVersion", p.MinVersion, "cipherSuites", len(p.CipherSuites))
	}
}

// sync issues certificates if needed, then renders, applies and prunes. It
// returns when to come back for certificate rotation.
func (o *Operator) sync(ctx context.Context, cfg config.Config) (apply.Result, time.Duration, error) {
	var requeue time.Duration
	if cfg.Webhook.ServiceCA && o.certs != nil && !o.certsRetired {
		// Before the Services ask service-ca for certificates of the
		// same names.
		if err := o.certs.Retire(ctx); err != nil {
			return apply.Result{}, 0, fmt.Errorf("handing the webhook certificates over to service-ca: %w", err)
		}
		o.certsRetired = true
	}
	if cfg.RendersOperand() && !cfg.Webhook.ServiceCA && o.certs != nil {
		o.certsRetired = false
		bundle, next, err := o.certs.Ensure(ctx)
		if err != nil {
			return apply.Result{}, 0, fmt.Errorf("ensuring webhook serving certificates: %w", err)
		}
		cfg.Webhook.CABundle = bundle
		if !next.IsZero() {
			requeue = max(next.Sub(o.opts.Now()), time.Second)
		}
	}
	objs, err := render.Render(cfg)
	if err != nil {
		return apply.Result{}, 0, err
	}
	var errs []error
	res, err := o.applier.Apply(ctx, objs)
	if err != nil {
		errs = append(errs, err)
	}
	// Prune only after a fully successful apply, so a partial failure never
	// removes something still in use.
	if len(errs) == 0 {
		if _, err := o.applier.Prune(ctx, PrunableKinds, cfg.Namespace, objs); err != nil {
			errs = append(errs, fmt.Errorf("pruning obsolete objects: %w", err))
		}
	}
	return res, requeue, errors.Join(errs...)
}

// installCRDs applies the CRDs the operator owns on this cluster.
func (o *Operator) installCRDs(ctx context.Context, cfg config.Config) error {
	crds, err := render.CRDs(cfg)
	if err != nil {
		return err
	}
	if _, err := o.applier.Apply(ctx, crds); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// appliedWorkload names the first operand workload an apply was just sent
// for, "" if none.
func appliedWorkload(applied []apply.ObjectRef) string {
	for _, ref := range applied {
		if ref.Group == "apps" && (ref.Kind == "Deployment" || ref.Kind == "DaemonSet") {
			return ref.Kind + " " + ref.Name
		}
	}
	return ""
}

// observeOperand summarises the operand Deployment and DaemonSet.
func (o *Operator) observeOperand(ctx context.Context, cfg config.Config, now time.Time) (status.Operand, error) {
	ns := o.opts.Namespace
	if cfg.Namespace != "" {
		ns = cfg.Namespace
	}
	d := &appsv1.Deployment{}
	err := o.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.OperandDeploymentName}, d)
	if apierrors.IsNotFound(err) {
		if o.operandMissingSince.IsZero() {
			o.operandMissingSince = now
		}
		return status.Operand{Since: o.operandMissingSince,
			Message: fmt.Sprintf("Deployment %s/%s does not exist yet", ns, config.OperandDeploymentName)}, nil
	}
	if err != nil {
		return status.Operand{}, fmt.Errorf("getting deployment %s/%s: %w", ns, config.OperandDeploymentName, err)
	}
	o.operandMissingSince = time.Time{}
	operand := DeploymentOperand(d)
	if cfg.TerminationHandlerImage != "" {
		ds := &appsv1.DaemonSet{}
		err := o.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.TerminationHandlerName}, ds)
		switch {
		case apierrors.IsNotFound(err):
			operand.RolledOut = false
			operand.Message = joinMsg(operand.Message, "DaemonSet "+config.TerminationHandlerName+" does not exist yet")
		case err != nil:
			return status.Operand{}, fmt.Errorf("getting daemonset %s/%s: %w", ns, config.TerminationHandlerName, err)
		default:
			if ok, msg := daemonSetRolledOut(ds); !ok {
				operand.RolledOut = false
				operand.Message = joinMsg(operand.Message, msg)
			}
		}
	}
	return operand, nil
}

// DeploymentOperand decides availability and rollout state of a Deployment.
func DeploymentOperand(d *appsv1.Deployment) status.Operand {
	op := status.Operand{Since: d.CreationTimestamp.Time}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			op.Available = c.Status == corev1.ConditionTrue
			op.Since = c.LastTransitionTime.Time
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case d.DeletionTimestamp != nil:
		op.Message = fmt.Sprintf("Deployment %s is being deleted", d.Name)
	case d.Generation > s.ObservedGeneration:
		op.Message = fmt.Sprintf("Deployment %s: the new spec (generation %d) is not observed yet", d.Name, d.Generation)
	case s.UpdatedReplicas < want:
		op.Message = fmt.Sprintf("Deployment %s: %d of %d replicas updated", d.Name, s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		op.Message = fmt.Sprintf("Deployment %s: %d old replicas pending termination", d.Name, s.Replicas-s.UpdatedReplicas)
	default:
		op.RolledOut = true
	}
	// Availability is reported separately: a crashing pod is an outage,
	// not a rollout.
	if !op.Available || s.AvailableReplicas < want {
		op.Message = joinMsg(op.Message, fmt.Sprintf("Deployment %s: %d of %d replicas available", d.Name, s.AvailableReplicas, want))
	}
	return op
}

func daemonSetRolledOut(ds *appsv1.DaemonSet) (bool, string) {
	s := ds.Status
	switch {
	case ds.Generation > s.ObservedGeneration:
		return false, fmt.Sprintf("DaemonSet %s: the new spec is not observed yet", ds.Name)
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return false, fmt.Sprintf("DaemonSet %s: %d of %d pods updated", ds.Name, s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	}
	return true, ""
}

// report computes and writes the ClusterOperator status. Without the
// clusteroperators CRD there is nowhere to report: it logs what it would
// have reported and waits for the CRD (watched).
func (o *Operator) report(ctx context.Context, obs status.Observation, served servedAPIs, cfg config.Config) (time.Duration, error) {
	if !served.serves(&configv1.ClusterOperator{}) {
		o.logUnreported(ctx, obs)
		return 0, nil
	}
	co, err := o.status.Get(ctx)
	if err != nil {
		return 0, err
	}
	if status.InstallGateApplies(co.Status, obs) && served.serves(&machinev1beta1.Machine{}) && served.serves(&machinev1beta1.MachineSet{}) {
		if obs.WaitingForWorkers, err = o.waitingForWorkers(ctx); err != nil {
			return 0, err
		}
	}
	next, requeue := status.Compute(co.Status, obs, status.Options{
		StableDuration: o.opts.StableDuration,
		DegradedAfter:  o.opts.DegradedAfter,
	})
	next.RelatedObjects = status.RelatedObjects(o.opts.Namespace)
	if _, err := o.status.Write(ctx, co, next); err != nil {
		return 0, err
	}
	o.recordOwnership(ctx, co, cfg)
	return requeue, nil
}

// waitingForWorkers is the install gate's check of the namespace's
// MachineSets and Machines (read from the cache, stripped by
// collector.Transform to what the check needs): "" when met.
func (o *Operator) waitingForWorkers(ctx context.Context) (string, error) {
	sets := &machinev1beta1.MachineSetList{}
	if err := o.reader.List(ctx, sets, client.InNamespace(o.opts.Namespace)); err != nil {
		return "", fmt.Errorf("listing machinesets for the install gate: %w", err)
	}
	if len(sets.Items) == 0 {
		return "", nil
	}
	machines := &machinev1beta1.MachineList{}
	if err := o.reader.List(ctx, machines, client.InNamespace(o.opts.Namespace)); err != nil {
		return "", fmt.Errorf("listing machines for the install gate: %w", err)
	}
	return status.CheckMinimumWorkers(sets.Items, machines.Items), nil
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// syncedImagesDigest is the digest of images.json the last sync read, "" if
// none ran yet.
func (o *Operator) syncedImagesDigest() string {
	if d := o.imagesDigest.Load(); d != nil {
		return *d
	}
	return ""
}
