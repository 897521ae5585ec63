// Package operator is the operator's sync loop (observe, render, apply, prune,
// report), one work item for every event. See docs/architecture.md.
package operator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
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
	// Certificates says who issues the webhook serving certificates.
	Certificates WebhookCertificates
	// StableDuration / DegradedAfter / UpgradeDegradedAfter: see status.Options.
	StableDuration       time.Duration
	DegradedAfter        time.Duration
	UpgradeDegradedAfter time.Duration
	// Clock tells the time; defaults to the real clock.
	Clock clock.PassiveClock
	// MetricsTLS, when set, is the metrics server's TLS, set to the cluster's
	// TLS profile at every sync; nil when the TLS flags fixed it.
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

	// imagesDigest is the digest of images.json the last sync read (see fileWatcher).
	imagesDigest atomic.Pointer[string]
	// failingSince starts the Degraded grace period (zero after a good sync).
	failingSince time.Time
	// lastGood is the last config built without input errors: it describes
	// the operand while an input is bad.
	lastGood config.Config
	// operandMissingSince: an absent Deployment also counts towards Degraded.
	operandMissingSince time.Time
	apis                *apiTracker
	// certsRetired: our webhook certificates were deleted for service-ca.
	certsRetired bool
	reported     reportedFacts
}

// New returns an Operator. reader should be the informer cache; c is used for
// writes. certs may be nil when service-ca issues the certificates.
func New(opts Options, c client.Client, reader client.Reader, certs CertIssuer, recorder status.Recorder) *Operator {
	opts.Clock = cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{})
	opts.Namespace = cmp.Or(opts.Namespace, config.DefaultNamespace)
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

// PrunableKinds are the kinds the operator deletes when obsolete, never CRDs
// (deleting one deletes every Machine) nor the operand's ServiceAccounts and
// RBAC (install/ ships them; the operator cannot write RBAC).
var PrunableKinds = slices.Concat(workloadKinds, frontKinds)

// workloadKinds run pods: deleted in the foreground.
var workloadKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
}

// frontKinds route requests to the workloads' pods.
var frontKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("Service"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
}

// pruneWait is how soon a sync looks again at workloads still being deleted
// (their deletion's watch event normally comes first).
const pruneWait = 5 * time.Second

// Reconcile runs one sync. It returns an error only for failures worth a
// rate-limited retry; timers come back as RequeueAfter.
func (o *Operator) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	now := o.opts.Clock.Now()
	var failure *status.Failure
	var retryErr error
	var requeue time.Duration
	var applied []apply.ObjectRef
	served, err := o.apis.observe(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	in, cfg, err := o.observeConfig(ctx, served)
	switch {
	case err != nil && config.ReasonOf(err) != "":
		// Bad input: leave the operand as it is, but install the CRDs (they
		// do not depend on it).
		failure = &status.Failure{Reason: config.ReasonOf(err), Message: err.Error(), Immediate: true}
		logger.Error(err, "bad operator input; leaving the operand as it is", "reason", failure.Reason)
		cfg = o.lastGood
		retryErr = o.installCRDs(ctx, config.ForCRDs(in))
	case err != nil:
		failure = &status.Failure{Reason: status.ReasonSyncFailed, Message: err.Error()}
		retryErr = err
		cfg = o.lastGood
	default:
		o.followTLSProfile(ctx, cfg.TLS)
		var res apply.Result
		res, requeue, err = o.sync(ctx, cfg)
		applied = res.Applied
		if err != nil {
			failure = &status.Failure{Reason: status.ReasonSyncFailed,
				Message: fmt.Sprintf("Failed to sync the Machine API for %s: %v", cfg.Describe(), err)}
			retryErr = err
		} else {
			o.lastGood = cfg
		}
		if msg := missingMessage(served.missing(cfg.OpenShift), cfg.OpenShift); msg != "" && failure == nil {
			failure = &status.Failure{Reason: ReasonMissingCRDs, Message: msg}
		}
	}
	if failure == nil {
		o.failingSince = time.Time{}
	} else if o.failingSince.IsZero() {
		o.failingSince = now
	}

	obs := status.Observation{
		Now:            now,
		ReleaseVersion: o.opts.ReleaseVersion,
		NoOp:           cfg.NoOp,
		Failure:        failure,
		FailingSince:   o.failingSince,
		OperandUnknown: cfg.PlatformType == "", // only bad input leaves it empty
		Notes:          notes(cfg),
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
		// The cache may still hold the workloads from before this apply.
		if w := appliedWorkload(applied); w != "" {
			operand.RolledOut = false
			operand.Message = joinMsg(w+": new spec applied, waiting for the rollout", operand.Message)
		}
		obs.Operand = operand
	}
	timer, err := o.report(ctx, obs, served, cfg)
	if err != nil {
		return reconcile.Result{}, err
	}
	if retryErr != nil {
		logger.Error(retryErr, "sync failed; retrying")
		return reconcile.Result{}, retryErr
	}
	// Input errors wait for the (watched) input to change.
	return reconcile.Result{RequeueAfter: minPositive(requeue, timer)}, nil
}

// followTLSProfile gives the operator's metrics server the cluster's TLS
// profile (when it follows the profile at all).
func (o *Operator) followTLSProfile(ctx context.Context, p config.TLSProfile) {
	if o.opts.MetricsTLS == nil {
		return
	}
	switch changed, err := o.opts.MetricsTLS.Set(p.Options()); {
	case err != nil:
		log.FromContext(ctx).Error(err, "keeping the metrics server's TLS settings")
	case changed:
		log.FromContext(ctx).Info("metrics server follows the cluster's TLS profile", "minVersion", p.MinVersion, "cipherSuites", len(p.CipherSuites))
	}
}

// sync issues certificates if needed, then renders, applies and prunes. It
// returns when to come back for certificate rotation.
func (o *Operator) sync(ctx context.Context, cfg config.Config) (apply.Result, time.Duration, error) {
	var requeue time.Duration
	if cfg.Webhook.ServiceCA && o.certs != nil && !o.certsRetired {
		// Before the Services ask service-ca for certificates of the same names.
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
			requeue = max(next.Sub(o.opts.Clock.Now()), time.Second)
		}
	}
	objs, err := render.Render(cfg)
	if err != nil {
		return apply.Result{}, 0, err
	}
	res, err := o.applier.Apply(ctx, objs)
	if err != nil {
		return res, requeue, err
	}
	// Prune only after a fully successful apply: a partial failure never
	// removes something still in use.
	pending, err := o.prune(ctx, cfg.Namespace, objs)
	if err != nil {
		return res, requeue, fmt.Errorf("pruning obsolete objects: %w", err)
	}
	if pending {
		requeue = minPositive(requeue, pruneWait)
	}
	return res, requeue, nil
}

// prune deletes the obsolete workloads in the foreground and what routes to
// them; it reports whether workloads are still being deleted.
func (o *Operator) prune(ctx context.Context, namespace string, keep []client.Object) (bool, error) {
	if _, err := o.applier.Prune(ctx, workloadKinds, namespace, keep,
		client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return false, err
	}
	if _, err := o.applier.Prune(ctx, frontKinds, namespace, keep); err != nil {
		return false, err
	}
	left, err := o.applier.Obsolete(ctx, workloadKinds, namespace, keep)
	return len(left) > 0, err
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

// appliedWorkload names the first operand workload just applied, "" if none.
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
	ns := cmp.Or(cfg.Namespace, o.opts.Namespace)
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
	if cfg.TerminationHandlerImage == "" {
		return operand, nil
	}
	ds := &appsv1.DaemonSet{}
	msg := ""
	switch err := o.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.TerminationHandlerName}, ds); {
	case apierrors.IsNotFound(err):
		msg = "DaemonSet " + config.TerminationHandlerName + " does not exist yet"
	case err != nil:
		return status.Operand{}, fmt.Errorf("getting daemonset %s/%s: %w", ns, config.TerminationHandlerName, err)
	case ds.Generation > ds.Status.ObservedGeneration:
		msg = fmt.Sprintf("DaemonSet %s: the new spec is not observed yet", ds.Name)
	case ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled:
		msg = fmt.Sprintf("DaemonSet %s: %d of %d pods updated", ds.Name, ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
	}
	if msg != "" {
		operand.RolledOut = false
		operand.Message = joinMsg(operand.Message, msg)
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
	want := ptr.Deref(d.Spec.Replicas, 1)
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
	// A crashing pod is an outage, not a rollout.
	if !op.Available || s.AvailableReplicas < want {
		op.Message = joinMsg(op.Message, fmt.Sprintf("Deployment %s: %d of %d replicas available", d.Name, s.AvailableReplicas, want))
	}
	return op
}

// report computes and writes the ClusterOperator status. Without its CRD it
// logs what it would have reported.
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
		StableDuration: o.opts.StableDuration, DegradedAfter: o.opts.DegradedAfter, UpgradeDegradedAfter: o.opts.UpgradeDegradedAfter})
	next.RelatedObjects = status.RelatedObjects(o.opts.Namespace)
	if _, err := o.status.Write(ctx, co, next); err != nil {
		return 0, err
	}
	o.recordOwnership(ctx, co, cfg)
	return requeue, nil
}

// waitingForWorkers is the install gate's check of the namespace's
// MachineSets and Machines (from the stripped cache): "" when met.
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

// syncedImagesDigest is the digest of images.json the last sync read, "" before.
func (o *Operator) syncedImagesDigest() string {
	return ptr.Deref(o.imagesDigest.Load(), "")
}
