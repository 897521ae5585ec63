package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// handler adapts a handleFunc to admission.Handler and counts its requests. Not WithCustomDefaulter:
// it returns no warnings, its typed round trip patches fields nobody defaulted, its 400s name no field.
type handler struct {
	name   string
	opts   Options
	handle handleFunc
}

type handleFunc func(ctx context.Context, h *handler, req admission.Request) admission.Response

// Handle implements admission.Handler.
func (h *handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.handle(ctx, h, req)
	result := resultOf(resp)
	RequestsTotal.WithLabelValues(h.name, string(req.Operation), result).Inc()
	if result == ResultDenied {
		DenialsTotal.WithLabelValues(h.name).Inc()
	}
	return resp
}

// resultOf classifies a response for RequestsTotal.
func resultOf(resp admission.Response) string {
	switch {
	case !resp.Allowed && resp.Result != nil && (resp.Result.Code == http.StatusBadRequest || resp.Result.Code >= http.StatusInternalServerError):
		return ResultError
	case !resp.Allowed:
		return ResultDenied
	case len(resp.Patches) > 0:
		return ResultPatched
	default:
		return ResultAllowed
	}
}

// cluster reads the ClusterInfo; a failed read is a warning, the request handled without it.
func (h *handler) cluster(ctx context.Context, log logr.Logger) (ClusterInfo, admission.Warnings) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.LookupTimeout)
	defer cancel()
	info, err := lookupClusterInfo(ctx, h.opts.Reader)
	if err != nil {
		log.Error(err, "handling the request without the cluster's platform and infrastructure name")
		return ClusterInfo{}, admission.Warnings{fmt.Sprintf(
			"machine-api webhook could not read the cluster's Infrastructure (%v): the cluster-ID label and platform defaults were not applied", err)}
	}
	info.MachineNamespace = h.opts.MachineNamespace
	info.VSphereHostVMGroupZonal = h.opts.VSphereHostVMGroupZonal
	return info, nil
}

// secretLookup checks Secrets through the Reader (nil without one), reading
// only their metadata: the cached client then keeps no Secret data.
func (h *handler) secretLookup(ctx context.Context) SecretLookup {
	if h.opts.Reader == nil {
		return nil
	}
	return func(namespace, name string) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, h.opts.LookupTimeout)
		defer cancel()
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := h.opts.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); !apierrors.IsNotFound(err) {
			return err == nil, err
		}
		return false, nil
	}
}

// decode decodes a request's JSON object into into; every error says where the document is wrong.
func decode(raw []byte, into any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return fmt.Errorf("the admission request has no object")
	}
	if bytes.Equal(trimmed, []byte("null")) {
		return fmt.Errorf("decoding the object: the document must be a JSON object, not null")
	}
	err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if isSyntax, offset := sigsjson.SyntaxErrorOffset(err); isSyntax {
		return fmt.Errorf("decoding the object: malformed JSON at byte offset %d: %w", offset, err)
	}
	if trimmed[0] != '{' && errors.As(err, &typeErr) {
		return fmt.Errorf("decoding the object: the document must be a JSON object, not %s", typeErr.Value)
	}
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Errorf("decoding the object: %s: %w", typeErr.Field, err)
	}
	// A type's own UnmarshalJSON error (metav1.Time's) does not say where it is.
	if path := locate(trimmed, reflect.TypeOf(into).Elem(), err.Error()); path != "" {
		return fmt.Errorf("decoding the object: %s: %w", path, err)
	}
	return fmt.Errorf("decoding the object: %w", err)
}

// mutate answers a CREATE (and, with onUpdate, an UPDATE; old is nil on
// CREATE) with the JSON patch of the edits def makes to the decoded object.
func mutate[T any, P object[T]](kind string, onUpdate bool, def func(obj, old P, cluster ClusterInfo) (Defaulted, []edit)) handleFunc {
	return func(ctx context.Context, h *handler, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Create && (!onUpdate || req.Operation != admissionv1.Update) {
			return admission.Allowed("")
		}
		obj, old, err := decodeRequest[T, P](req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		log := logf.FromContext(ctx)
		cluster, warnings := h.cluster(ctx, log)
		d, edits := def(obj, old, cluster)
		// As OpenShift's defaulting webhook, 403 with the field error; on CREATE only,
		// so an object already without a value keeps its updates (validation ratchets).
		if len(d.Refused) > 0 && req.Operation == admissionv1.Create {
			msg := d.Refused.ToAggregate().Error()
			log.V(2).Info("refusing", "reason", msg)
			return admission.Denied(msg).WithWarnings(warnings...)
		}
		// Like OpenShift, the platform's notes on its defaults are logged only.
		for _, w := range d.Warnings {
			log.V(2).Info("defaulting the providerSpec", "note", w)
		}
		if !d.Changed() {
			return admission.Allowed("").WithWarnings(warnings...)
		}
		kv := []any{"clusterIDLabel", d.Labels, "providerSpecFields", d.ProviderSpec}
		if len(d.Spec) > 0 {
			kv = append(kv, "specFields", d.Spec)
		}
		if d.Finalizer {
			kv = append(kv, "finalizer", machinev1beta1.MachineFinalizer)
		}
		log.V(2).Info("defaulting "+kind, kv...)
		return patchResponse(req.Object.Raw, edits).WithWarnings(warnings...)
	}
}

// validate admits a CREATE or UPDATE that create or update finds no error in,
// else refuses it with the API server's 422 Invalid listing every error.
func validate[T any, P object[T]](kind string,
	create func(P, ClusterInfo, SecretLookup) (field.ErrorList, admission.Warnings),
	update func(P, P, ClusterInfo, SecretLookup) (field.ErrorList, admission.Warnings)) handleFunc {
	return func(ctx context.Context, h *handler, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return admission.Allowed("")
		}
		obj, old, err := decodeRequest[T, P](req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if req.Operation == admissionv1.Update && FinalizersOnlyRemoved(obj, old) {
			return admission.Allowed("finalizer removal from a deleting " + kind + " is always allowed")
		}
		log := logf.FromContext(ctx)
		cluster, warnings := h.cluster(ctx, log)
		var errs field.ErrorList
		var more admission.Warnings
		if req.Operation == admissionv1.Create {
			errs, more = create(obj, cluster, h.secretLookup(ctx))
		} else {
			errs, more = update(obj, old, cluster, h.secretLookup(ctx))
		}
		if warnings = append(warnings, more...); len(errs) == 0 {
			if len(warnings) > 0 {
				log.V(2).Info("admitting with warnings", "warnings", warnings)
			}
			return admission.Allowed("").WithWarnings(warnings...)
		}
		name := obj.GetName()
		if name == "" && obj.GetGenerateName() != "" {
			name = obj.GetGenerateName() + "*" // a prefix on create
		}
		status := apierrors.NewInvalid(schema.GroupKind{Group: machinev1beta1.GroupName, Kind: kind}, name, errs).ErrStatus
		log.V(2).Info("refusing", "reason", status.Message)
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status, Warnings: warnings}}
	}
}

// object is a pointer to a Kubernetes object type T.
type object[T any] interface {
	*T
	client.Object
}

// decodeRequest decodes the request's object and, on UPDATE, its old object (else nil).
func decodeRequest[T any, P object[T]](req admission.Request) (obj, old P, err error) {
	obj = new(T)
	if err := decode(req.Object.Raw, obj); err != nil {
		return nil, nil, err
	}
	if req.Operation == admissionv1.Update {
		old = new(T)
		if err := decode(req.OldObject.Raw, old); err != nil {
			return nil, nil, fmt.Errorf("old object: %w", err)
		}
	}
	return obj, old, nil
}

// edit replaces the value at path of the object's JSON.
type edit struct {
	path  []string
	value any
}

// patchResponse answers with the JSON patch of edits to the request's object:
// only the edited fields, never those a typed round trip would add.
func patchResponse(original []byte, edits []edit) admission.Response {
	var obj map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(original, &obj); err != nil {
		// The JSON patch is computed on float64 numbers: a larger one is refused where it is.
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			err = fmt.Errorf("%s: %s is out of range", locate(bytes.TrimSpace(original), reflect.TypeOf(obj), err.Error()), typeErr.Value)
		}
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	for _, e := range edits {
		parent := obj
		for _, k := range e.path[:len(e.path)-1] {
			child, ok := parent[k].(map[string]any)
			if !ok {
				child = map[string]any{}
				parent[k] = child
			}
			parent = child
		}
		parent[e.path[len(e.path)-1]] = e.value
	}
	patched, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the defaulted object: %w", err))
	}
	return admission.PatchResponseFromRaw(original, patched)
}

func defaultMachineEdits(m, _ *machinev1beta1.Machine, cluster ClusterInfo) (Defaulted, []edit) {
	d := DefaultMachine(m, cluster)
	var edits []edit
	if d.Labels {
		edits = append(edits, edit{[]string{"metadata", "labels"}, m.Labels})
	}
	if d.Finalizer {
		edits = append(edits, edit{[]string{"metadata", "finalizers"}, m.Finalizers})
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, edit{[]string{"spec", "providerSpec", "value"}, json.RawMessage(m.Spec.ProviderSpec.Value.Raw)})
	}
	return d, edits
}

func defaultMachineSetEdits(ms, _ *machinev1beta1.MachineSet, cluster ClusterInfo) (Defaulted, []edit) {
	d := DefaultMachineSet(ms, cluster)
	return d, templatedEdits(d, ms.Labels, &ms.Spec.Template)
}

// templatedEdits are the edits of what defaultTemplated changed.
func templatedEdits(d Defaulted, labels map[string]string, tmpl *machinev1beta1.MachineTemplateSpec) []edit {
	var edits []edit
	if d.Labels {
		edits = append(edits, edit{[]string{"metadata", "labels"}, labels},
			edit{[]string{"spec", "template", "metadata", "labels"}, tmpl.Labels})
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, edit{[]string{"spec", "template", "spec", "providerSpec", "value"}, json.RawMessage(tmpl.Spec.ProviderSpec.Value.Raw)})
	}
	return edits
}
