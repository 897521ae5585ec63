package machinehealthcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// externalRemediation creates remediation requests from the template of one
// MachineHealthCheck during one reconcile. The template is read once (on
// first use) and the outcome is recorded in the status conditions
// ExternalRemediationTemplateAvailable and
// ExternalRemediationRequestAvailable, which are persisted with the rest of
// the status.
type externalRemediation struct {
	r        *Reconciler
	mhc      *machinev1beta1.MachineHealthCheck
	st       *machinev1beta1.MachineHealthCheckStatus
	now      time.Time
	template *unstructured.Unstructured // nil when unusable
	gvk      schema.GroupVersionKind    // of the requests
	failed   []string
}

// newExternalRemediation reads the template and sets
// ExternalRemediationTemplateAvailable.
func (r *Reconciler) newExternalRemediation(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) *externalRemediation {
	e := &externalRemediation{r: r, mhc: mhc, st: st, now: now}
	ref := mhc.Spec.RemediationTemplate
	tmpl, gvk, err := r.readTemplate(ctx, mhc)
	if err != nil {
		msg := fmt.Sprintf("Remediation template %s %s is not usable: %v", ref.Kind, ref.Name, err)
		st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionFalse,
			machinev1beta1.ExternalRemediationTemplateNotFound, machinev1beta1.ConditionSeverityError, msg), now)
		if r.events.First(client.ObjectKeyFromObject(mhc), "", EventTemplateNotFound, msg) {
			r.events.Eventf(mhc, nil, corev1.EventTypeWarning, EventTemplateNotFound, "Remediate", "%s", msg)
		}
		ctrl.LoggerFrom(ctx).Info("remediation template unusable", "error", err)
		return e
	}
	r.events.Clear(client.ObjectKeyFromObject(mhc), "", EventTemplateNotFound)
	st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionTrue,
		ReasonTemplateAvailable, "", ""), now)
	e.template, e.gvk = tmpl, gvk
	return e
}

// readTemplate reads mhc's remediation template (from its namespace, or the
// MachineHealthCheck's when it names none) and returns it with the kind of
// the requests it makes.
func (r *Reconciler) readTemplate(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck) (*unstructured.Unstructured, schema.GroupVersionKind, error) {
	ref := mhc.Spec.RemediationTemplate
	kind, err := requestKind(ref.Kind)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q: %w", ref.APIVersion, err)
	}
	ns := ref.Namespace
	if ns == "" {
		ns = mhc.Namespace
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, tmpl); err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	return tmpl, gv.WithKind(kind), nil
}

// request makes sure an external remediation request for m exists. A
// missing one is created only if admit (the pacing) allows it now; created
// reports whether it was.
func (e *externalRemediation) request(ctx context.Context, m *machinev1beta1.Machine, admit func() bool) (created bool, err error) {
	if e.template == nil {
		return false, nil // reported by ExternalRemediationTemplateAvailable=False; a template change requeues
	}
	key := client.ObjectKeyFromObject(e.mhc)
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(e.gvk)
	err = e.r.apiReader.Get(ctx, client.ObjectKeyFromObject(m), existing)
	if err == nil {
		e.setRequestCondition()
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, e.fail(m, fmt.Errorf("reading %s %s/%s: %w", e.gvk.Kind, m.Namespace, m.Name, err))
	}
	if !admit() {
		return false, nil
	}
	req := buildRequest(e.template, e.gvk, m)
	if err := e.r.client.Create(ctx, req); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, e.fail(m, fmt.Errorf("creating %s %s/%s: %w", e.gvk.Kind, m.Namespace, m.Name, err))
	}
	e.setRequestCondition()
	RemediationSuccessTotal.WithLabelValues(e.mhc.Name, e.mhc.Namespace).Inc()
	e.r.machineEventOnce(key, m, corev1.EventTypeNormal, EventRequestCreated,
		fmt.Sprintf("Created %s %s/%s for unhealthy Machine %s", e.gvk.Kind, m.Namespace, m.Name, m.Name))
	return true, nil
}

func (e *externalRemediation) fail(m *machinev1beta1.Machine, err error) error {
	e.failed = append(e.failed, err.Error())
	e.st.Conditions = conditions.Set(e.st.Conditions, conditions.New(machinev1beta1.ExternalRemediationRequestAvailable, corev1.ConditionFalse,
		machinev1beta1.ExternalRemediationRequestCreationFailed, machinev1beta1.ConditionSeverityError, patch.Truncate(strings.Join(e.failed, "; "), 1024)), e.now)
	e.r.machineEventOnce(client.ObjectKeyFromObject(e.mhc), m, corev1.EventTypeWarning, EventRequestCreationFailed, err.Error())
	return err
}

func (e *externalRemediation) setRequestCondition() {
	if len(e.failed) > 0 {
		return
	}
	e.st.Conditions = conditions.Set(e.st.Conditions, conditions.New(machinev1beta1.ExternalRemediationRequestAvailable, corev1.ConditionTrue,
		ReasonRequestAvailable, "", ""), e.now)
}

// buildRequest makes the request object for m from the template: same
// apiVersion, the request kind, m's namespace and name, spec =
// template.spec.template.spec, labels and annotations from
// template.spec.template.metadata, owned by m (not as controller).
func buildRequest(tmpl *unstructured.Unstructured, gvk schema.GroupVersionKind, m *machinev1beta1.Machine) *unstructured.Unstructured {
	req := &unstructured.Unstructured{Object: map[string]any{}}
	req.SetGroupVersionKind(gvk)
	req.SetNamespace(m.Namespace)
	req.SetName(m.Name)
	if spec, ok, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec"); ok {
		_ = unstructured.SetNestedMap(req.Object, spec, "spec")
	}
	if l, ok, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "labels"); ok {
		req.SetLabels(l)
	}
	annotations, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ClonedFromNameAnnotation] = tmpl.GetName()
	annotations[ClonedFromGroupKindAnnotation] = tmpl.GroupVersionKind().GroupKind().String()
	req.SetAnnotations(annotations)
	req.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: machinev1beta1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
		BlockOwnerDeletion: ptr.To(false),
	}})
	return req
}

// cleanupRequests deletes the remediation requests of healthy targets.
func (r *Reconciler) cleanupRequests(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target) error {
	ref := mhc.Spec.RemediationTemplate
	kind, err := requestKind(ref.Kind)
	if err != nil {
		return nil // reported when remediating
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	gvk := gv.WithKind(kind)
	var healthy []*machinev1beta1.Machine
	for _, t := range targets {
		if t.verdict.Health == Healthy {
			healthy = append(healthy, t.machine)
		}
	}
	if len(healthy) == 0 {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
	if err := r.apiReader.List(ctx, list, client.InNamespace(mhc.Namespace)); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing %s in %s: %w", kind, mhc.Namespace, err)
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	var errs []error
	for _, m := range healthy {
		req, ok := byName[m.Name]
		if !ok || req.GetDeletionTimestamp() != nil || !ownedBy(req, m) {
			continue
		}
		if err := r.client.Delete(ctx, req, client.Preconditions{UID: ptr.To(req.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", kind, req.GetNamespace(), req.GetName(), err))
			continue
		}
		r.events.Eventf(m, nil, corev1.EventTypeNormal, EventRequestDeleted, "Remediate",
			"Machine %s is healthy again; deleted %s %s", m.Name, kind, req.GetName())
	}
	return errors.Join(errs...)
}

func ownedBy(o *unstructured.Unstructured, m *machinev1beta1.Machine) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == m.UID {
			return true
		}
	}
	return false
}
