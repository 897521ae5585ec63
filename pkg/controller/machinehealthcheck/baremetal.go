package machinehealthcheck

import (
	"context"
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// annotateForBaremetal remediates m with the external-baremetal strategy: it
// adds ExternalRemediationAnnotation to the Machine, which OpenShift's
// baremetal provider acts on (power-cycles the host and removes the
// annotation once the Node is back). done reports whether this call added it.
func (r *Reconciler) annotateForBaremetal(ctx context.Context, mhc *machinev1beta1.MachineHealthCheck, m *machinev1beta1.Machine, why string) (done bool, err error) {
	ctrl.LoggerFrom(ctx).Info("annotating unhealthy Machine for external remediation", "machine", m.Name, "reason", why)
	patched := m.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[ExternalRemediationAnnotation] = ""
	// A merge patch of one key: it cannot undo a concurrent change to any
	// other field, so no optimistic lock is needed.
	if err := r.client.Patch(ctx, patched, client.MergeFrom(m)); err != nil {
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
