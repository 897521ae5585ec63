package vsphere

import (
	"encoding/json"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

const (
	providerSpecKind   = "VSphereMachineProviderSpec"
	providerStatusKind = "VSphereMachineProviderStatus"
)

// decodeSpec reads the Machine's VSphereMachineProviderSpec; a problem is an InvalidConfiguration naming the field.
func decodeSpec(m *machinev1beta1.Machine) (*machinev1beta1.VSphereMachineProviderSpec, error) {
	v := m.Spec.ProviderSpec.Value
	if v == nil || len(v.Raw) == 0 {
		return nil, provider.InvalidConfiguration("spec.providerSpec.value: missing; set a %s", providerSpecKind)
	}
	spec := &machinev1beta1.VSphereMachineProviderSpec{}
	if err := json.Unmarshal(v.Raw, spec); err != nil {
		return nil, provider.InvalidConfiguration("spec.providerSpec.value: not a %s: %v", providerSpecKind, err)
	}
	// Another provider's kind in the shared machine.openshift.io group is refused, not failed.
	if spec.Kind != "" && spec.Kind != providerSpecKind {
		return nil, fmt.Errorf("spec.providerSpec.value.kind %q is another provider's; the vSphere provider serves %s only and leaves this Machine alone", spec.Kind, providerSpecKind)
	}
	if spec.Workspace == nil || spec.Workspace.Server == "" {
		return nil, provider.InvalidConfiguration("spec.providerSpec.value.workspace.server: required (the vCenter to create the VM on)")
	}
	if spec.Template == "" {
		return nil, provider.InvalidConfiguration("spec.providerSpec.value.template: required (the VM template to clone)")
	}
	return spec, nil
}

// decodeStatus reads the providerStatus; an unreadable one (the provider's own record) starts afresh.
func decodeStatus(m *machinev1beta1.Machine) *machinev1beta1.VSphereMachineProviderStatus {
	st := &machinev1beta1.VSphereMachineProviderStatus{}
	if ps := m.Status.ProviderStatus; ps != nil && len(ps.Raw) > 0 {
		_ = json.Unmarshal(ps.Raw, st)
	}
	return st
}

// writeStatus stores st on the Machine (persisted by the machine controller) and returns err.
func writeStatus(m *machinev1beta1.Machine, st *machinev1beta1.VSphereMachineProviderStatus, err error) error {
	st.APIVersion = machinev1beta1.GroupVersion.String()
	st.Kind = providerStatusKind
	raw, _ := json.Marshal(st) // cannot fail: plain fields only
	m.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
	return err
}

// setCreation records the MachineCreation condition as OpenShift does (True/MachineCreationSucceeded, or
// False/MachineCreationFailed with the error); the transition time stays while the status does.
func setCreation(st *machinev1beta1.VSphereMachineProviderStatus, now time.Time, err error) {
	if err != nil {
		setCondition(st, now, metav1.ConditionFalse, machinev1beta1.MachineCreationFailedConditionReason, err.Error())
		return
	}
	setCondition(st, now, metav1.ConditionTrue, machinev1beta1.MachineCreationSucceededConditionReason, "Machine successfully created")
}

// setCondition sets the MachineCreation condition.
func setCondition(st *machinev1beta1.VSphereMachineProviderStatus, now time.Time, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: string(machinev1beta1.MachineCreation), Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
}
