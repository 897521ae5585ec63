package machinehealthcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// externalRemediation creates one reconcile's remediation requests from a template read
// once; outcomes go to the ExternalRemediation{Template,Request}Available conditions.
type externalRemediation struct {
	r        *Reconciler
	mhc      *machinev1beta1.MachineHealthCheck
	st       *machinev1beta1.MachineHealthCheckStatus
	now      time.Time
	template *unstructured.Unstructured // nil when unusable
	gvk      schema.GroupVersionKind    // of the requests
	failed   []string
}

// newExternalRemediation reads the template (from mhc's namespace when the reference
// names none) and sets ExternalRemediationTemplateAvailable.
func (r *Reconciler) newExternalRemediation(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, st *machinev1beta1.MachineHealthCheckStatus, now time.Time) *externalRemediation {
	e := &externalRemediation{r: r, mhc: mhc, st: st, now: now}
	key := client.ObjectKeyFromObject(mhc)
	ref, tmpl := mhc.Spec.RemediationTemplate, &unstructured.Unstructured{}
	gvk, err := requestGVK(ref)
	if ns := cmp.Or(ref.Namespace, mhc.Namespace); err == nil {
		tmpl.SetGroupVersionKind(gvk.GroupVersion().WithKind(ref.Kind))
		if err = r.opts.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, tmpl); err != nil {
			err = fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
	}
	if err != nil {
		msg := fmt.Sprintf("Remediation template %s %s is not usable: %v", ref.Kind, ref.Name, err)
		st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionFalse,
			machinev1beta1.ExternalRemediationTemplateNotFound, machinev1beta1.ConditionSeverityError, msg), now)
		r.events.Once(key, "", patch.Event{Regarding: mhc, Type: corev1.EventTypeWarning, Reason: EventTemplateNotFound, Action: "Remediate", Note: msg})
		ctrl.LoggerFrom(ctx).Info("remediation template unusable", "err", err)
		return e
	}
	r.events.Clear(key, "", EventTemplateNotFound)
	st.Conditions = conditions.Set(st.Conditions, conditions.New(machinev1beta1.ExternalRemediationTemplateAvailable, corev1.ConditionTrue,
		ReasonTemplateAvailable, "", ""), now)
	e.template, e.gvk = tmpl, gvk
	return e
}

// requestGVK is the kind of the requests a remediation template makes.
func requestGVK(ref *corev1.ObjectReference) (schema.GroupVersionKind, error) {
	kind, err := requestKind(ref.Kind)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q: %w", ref.APIVersion, err)
	}
	return gv.WithKind(kind), nil
}

// request makes sure an external remediation request for m exists, creating a
// missing one only if admit (the pacing) allows; created reports a creation.
func (e *externalRemediation) request(ctx context.Context, m *machinev1beta1.Machine, admit func() bool) (created bool, err error) {
	if e.template == nil {
		return false, nil // reported by ExternalRemediationTemplateAvailable=False; a template change requeues
	}
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(e.gvk)
	err = e.r.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(m), existing)
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
	if err := e.r.opts.Client.Create(ctx, buildRequest(e.template, e.gvk, m)); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, e.fail(m, fmt.Errorf("creating %s %s/%s: %w", e.gvk.Kind, m.Namespace, m.Name, err))
	}
	e.setRequestCondition()
	RemediationSuccessTotal.WithLabelValues(e.mhc.Name, e.mhc.Namespace).Inc()
	e.r.machineEventOnce(client.ObjectKeyFromObject(e.mhc), m, corev1.EventTypeNormal, EventRequestCreated,
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
	if len(e.failed) == 0 {
		e.st.Conditions = conditions.Set(e.st.Conditions, conditions.New(machinev1beta1.ExternalRemediationRequestAvailable, corev1.ConditionTrue,
			ReasonRequestAvailable, "", ""), e.now)
	}
}

// buildRequest makes m's request (its namespace and name) from template.spec.template,
// owned by m (not as controller).
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
	req.SetAnnotations(labels.Merge(annotations, labels.Set{
		ClonedFromNameAnnotation: tmpl.GetName(), ClonedFromGroupKindAnnotation: tmpl.GroupVersionKind().GroupKind().String()}))
	req.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: machinev1beta1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
		BlockOwnerDeletion: ptr.To(false),
	}})
	return req
}

// remediationRequests are the remediation requests in a MachineHealthCheck's namespace by name
// (a Machine's request has its name); nil without a template or an unusable one.
type remediationRequests map[string]*unstructured.Unstructured

// of returns m's request: the one of its name owned by it (nil: none).
func (rs remediationRequests) of(m *machinev1beta1.Machine) *unstructured.Unstructured {
	req, ok := rs[m.Name]
	if !ok || !slices.ContainsFunc(req.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == m.UID }) {
		return nil
	}
	return req
}

// listRequests reads mhc's remediation requests uncached (their kind is not watched); a
// template that names no usable kind, or a kind not served, gives none.
func (r *Reconciler) listRequests(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck) (remediationRequests, error) {
	if mhc.Spec.RemediationTemplate == nil {
		return nil, nil
	}
	gvk, err := requestGVK(mhc.Spec.RemediationTemplate)
	if err != nil {
		return nil, nil // reported when remediating
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.opts.APIReader.List(ctx, list, client.InNamespace(mhc.Namespace)); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, mhc.Namespace, err)
	}
	byName := remediationRequests{}
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	return byName, nil
}

// cleanupRequests deletes the remediation requests of healthy targets.
func (r *Reconciler) cleanupRequests(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, targets []target, requests remediationRequests) error {
	var errs []error
	for _, t := range targets {
		m := t.machine
		req := requests.of(m)
		if t.verdict.Health != Healthy || req == nil || req.GetDeletionTimestamp() != nil {
			continue
		}
		if err := r.opts.Client.Delete(ctx, req, client.Preconditions{UID: ptr.To(req.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", req.GetKind(), req.GetNamespace(), req.GetName(), err))
			continue
		}
		r.events.Eventf(m, nil, corev1.EventTypeNormal, EventRequestDeleted, "Remediate",
			"Machine %s is healthy again; deleted %s %s", m.Name, req.GetKind(), req.GetName())
	}
	return errors.Join(errs...)
}

// annotateForBaremetal adds ExternalRemediationAnnotation to m for OpenShift's
// baremetal provider (docs/openshift.md); done reports whether it added it.
func (r *Reconciler) annotateForBaremetal(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, m *machinev1beta1.Machine, why string) (done bool, err error) {
	ctrl.LoggerFrom(ctx).Info("annotating unhealthy Machine for external remediation", "machine", m.Name, "reason", why)
	patched := m.DeepCopy()
	metav1.SetMetaDataAnnotation(&patched.ObjectMeta, ExternalRemediationAnnotation, "")
	// A merge patch of one key undoes no concurrent change: no lock needed.
	if err := r.opts.Client.Patch(ctx, patched, client.MergeFrom(m)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		r.machineEventOnce(client.ObjectKeyFromObject(mhc), m, corev1.EventTypeWarning, EventExternalAnnotationFailed,
			fmt.Sprintf("Requesting external remediation of Machine %s failed: annotating it %s: %v", m.Name, ExternalRemediationAnnotation, err))
		return false, fmt.Errorf("annotating unhealthy Machine %s/%s with %s: %w", m.Namespace, m.Name, ExternalRemediationAnnotation, err)
	}
	r.events.Eventf(m, mhc, corev1.EventTypeNormal, EventExternalAnnotationAdded, "Remediate",
		"Requested external remediation of Machine %s (%s): annotated %s for the baremetal provider to power-cycle its host", m.Name, why, ExternalRemediationAnnotation)
	return true, nil
}
