package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// handler adapts one of the handle functions to admission.Handler and counts
// its requests.
type handler struct {
	name   string
	opts   Options
	handle func(ctx context.Context, h *handler, req admission.Request) admission.Response
}

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

// cluster reads the ClusterInfo for one request. A failed read is logged and
// returned as a warning; the request is then handled without cluster facts.
func (h *handler) cluster(ctx context.Context, log logr.Logger) (ClusterInfo, admission.Warnings) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.LookupTimeout)
	defer cancel()
	info, err := lookupClusterInfo(ctx, h.opts.Reader)
	if err != nil {
		log.Error(err, "Handling the request without the cluster's platform and infrastructure name")
		return ClusterInfo{}, admission.Warnings{fmt.Sprintf(
			"machine-api webhook could not read the cluster's Infrastructure (%v): the cluster-ID label and platform defaults were not applied", err)}
	}
	return info, nil
}

func decode(raw []byte, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("the admission request has no object")
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, into); err != nil {
		return fmt.Errorf("decoding the object: %w", err)
	}
	return nil
}

func mutateMachine(ctx context.Context, h *handler, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	log := logf.FromContext(ctx)
	m := &machinev1beta1.Machine{}
	if err := decode(req.Object.Raw, m); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	cluster, warnings := h.cluster(ctx, log)
	d := DefaultMachine(m, cluster)
	if !d.Changed() {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	var edits []edit
	if d.Labels {
		edits = append(edits, labelsEdit(m.Labels, "metadata", "labels"))
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, rawEdit(m.Spec.ProviderSpec.Value.Raw, "spec", "providerSpec", "value"))
	}
	log.V(2).Info("Defaulting Machine", "clusterIDLabel", d.Labels, "providerSpecFields", d.ProviderSpec)
	return patchResponse(req.Object.Raw, edits).WithWarnings(warnings...)
}

func mutateMachineSet(ctx context.Context, h *handler, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	log := logf.FromContext(ctx)
	ms := &machinev1beta1.MachineSet{}
	if err := decode(req.Object.Raw, ms); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	cluster, warnings := h.cluster(ctx, log)
	d := DefaultMachineSet(ms, cluster)
	if !d.Changed() {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	var edits []edit
	if d.Labels {
		edits = append(edits,
			labelsEdit(ms.Labels, "metadata", "labels"),
			labelsEdit(ms.Spec.Template.Labels, "spec", "template", "metadata", "labels"))
	}
	if len(d.ProviderSpec) > 0 {
		edits = append(edits, rawEdit(ms.Spec.Template.Spec.ProviderSpec.Value.Raw, "spec", "template", "spec", "providerSpec", "value"))
	}
	log.V(2).Info("Defaulting MachineSet", "clusterIDLabel", d.Labels, "providerSpecFields", d.ProviderSpec)
	return patchResponse(req.Object.Raw, edits).WithWarnings(warnings...)
}

func validateMachine(ctx context.Context, h *handler, req admission.Request) admission.Response {
	log := logf.FromContext(ctx)
	m := &machinev1beta1.Machine{}
	var errs field.ErrorList
	var warnings admission.Warnings
	switch req.Operation {
	case admissionv1.Create:
		if err := decode(req.Object.Raw, m); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		var cluster ClusterInfo
		cluster, warnings = h.cluster(ctx, log)
		errs = ValidateMachine(m, cluster)
	case admissionv1.Update:
		old := &machinev1beta1.Machine{}
		if err := decode(req.Object.Raw, m); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := decode(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("old object: %w", err))
		}
		if FinalizersOnlyRemoved(m, old) {
			return admission.Allowed("finalizer removal from a deleting Machine is always allowed")
		}
		cluster, lookupWarnings := h.cluster(ctx, log)
		var ratcheted admission.Warnings
		errs, ratcheted = ValidateMachineUpdate(m, old, cluster)
		warnings = append(lookupWarnings, ratcheted...)
	default:
		return admission.Allowed("")
	}
	return validationResponse(log, "Machine", objectName(m.Name, m.GenerateName), errs, warnings)
}

func validateMachineSet(ctx context.Context, h *handler, req admission.Request) admission.Response {
	log := logf.FromContext(ctx)
	ms := &machinev1beta1.MachineSet{}
	var errs field.ErrorList
	var warnings admission.Warnings
	switch req.Operation {
	case admissionv1.Create:
		if err := decode(req.Object.Raw, ms); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		var cluster ClusterInfo
		cluster, warnings = h.cluster(ctx, log)
		errs = ValidateMachineSet(ms, cluster)
	case admissionv1.Update:
		old := &machinev1beta1.MachineSet{}
		if err := decode(req.Object.Raw, ms); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := decode(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("old object: %w", err))
		}
		if FinalizersOnlyRemoved(ms, old) {
			return admission.Allowed("finalizer removal from a deleting MachineSet is always allowed")
		}
		cluster, lookupWarnings := h.cluster(ctx, log)
		var ratcheted admission.Warnings
		errs, ratcheted = ValidateMachineSetUpdate(ms, old, cluster)
		warnings = append(lookupWarnings, ratcheted...)
	default:
		return admission.Allowed("")
	}
	return validationResponse(log, "MachineSet", objectName(ms.Name, ms.GenerateName), errs, warnings)
}

// validationResponse admits the request when errs is empty, else refuses it
// with the API server's usual 422 Invalid status listing every field error:
//
//	Machine.machine.openshift.io "m" is invalid: spec.providerSpec.value.cpu: Invalid value: "-1": must be positive
func validationResponse(log logr.Logger, kind, name string, errs field.ErrorList, warnings admission.Warnings) admission.Response {
	if len(errs) == 0 {
		if len(warnings) > 0 {
			log.V(2).Info("Admitting with warnings", "warnings", warnings)
		}
		return admission.Allowed("").WithWarnings(warnings...)
	}
	status := apierrors.NewInvalid(schema.GroupKind{Group: machinev1beta1.GroupName, Kind: kind}, name, errs).ErrStatus
	log.V(2).Info("Refusing", "reason", status.Message)
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &status,
		Warnings: warnings,
	}}
}

// objectName is the name for messages; on create it may only be a prefix.
func objectName(name, generateName string) string {
	if name == "" && generateName != "" {
		return generateName + "*"
	}
	return name
}

// edit replaces the value at path of the object's JSON.
type edit struct {
	path  []string
	value any
}

func labelsEdit(labels map[string]string, path ...string) edit {
	if labels == nil {
		return edit{}
	}
	return edit{path: path, value: labels}
}

func rawEdit(raw json.RawMessage, path ...string) edit {
	return edit{path: path, value: raw}
}

// patchResponse applies edits to the request's JSON object and answers with
// the JSON patch from the original to the result: only the edited fields
// appear in the patch, never fields a typed round trip would add.
func patchResponse(original []byte, edits []edit) admission.Response {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(original))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	for _, e := range edits {
		if len(e.path) == 0 {
			continue
		}
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
