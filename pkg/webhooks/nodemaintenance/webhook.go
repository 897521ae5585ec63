// Package nodemaintenance serves the NodeMaintenance validating webhook with medik8s's
// rules and messages. See docs/contract.md ("Admission: NodeMaintenance").
package nodemaintenance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	nmv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/nodemaintenance/v1beta1"
	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
)

// Path is where the webhook is served: medik8s's, so a configuration fits both servers.
const Path = "/validate-nodemaintenance-medik8s-io-v1beta1-nodemaintenance"

// WebhookName is the webhook's name in the ValidatingWebhookConfiguration (medik8s's).
const WebhookName = "vnodemaintenance.kb.io"

// clusterVersionKind is served only on OpenShift (medik8s's test).
var clusterVersionKind = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterVersion"}

// Validator decides on NodeMaintenance admission requests.
type Validator struct {
	// reader is uncached (the manager's API reader): a NodeMaintenance created a moment ago must be seen.
	reader client.Reader
	// isOpenShift: the etcd quorum guard can exist; asked for control-plane nodes only.
	isOpenShift func(context.Context) (bool, error)
}

var _ admission.Validator[*nmv1beta1.NodeMaintenance] = &Validator{}

// SetupWithManager serves the webhook at Path on mgr's webhook server.
func SetupWithManager(mgr manager.Manager) error {
	v := &Validator{reader: mgr.GetAPIReader(), isOpenShift: KindServed(mgr.GetRESTMapper(), clusterVersionKind)}
	mgr.GetWebhookServer().Register(Path, admission.WithValidator(mgr.GetScheme(), v))
	return nil
}

// KindServed returns a check of whether the API server serves gvk (the
// mapper looks a missing kind up again, so a later install is seen).
func KindServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind) func(context.Context) (bool, error) {
	return func(context.Context) (bool, error) {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); !meta.IsNoMatchError(err) {
			return err == nil, err
		}
		return false, nil
	}
}

// ValidateCreate refuses as decideCreate does; a failed read asks to try again (as medik8s).
func (v *Validator) ValidateCreate(ctx context.Context, nm *nmv1beta1.NodeMaintenance) (admission.Warnings, error) {
	nodeName := nm.Spec.NodeName
	facts, err := v.observeCreate(ctx, nodeName)
	if err == nil {
		err = decideCreate(nodeName, facts)
	}
	if err != nil {
		logf.FromContext(ctx).Info("refused a NodeMaintenance", "name", nm.Name, "node", nodeName, "err", err)
	}
	return nil, err
}

// ValidateUpdate refuses a changed spec.nodeName.
func (v *Validator) ValidateUpdate(_ context.Context, oldNM, newNM *nmv1beta1.NodeMaintenance) (admission.Warnings, error) {
	return nil, decideUpdate(oldNM, newNM)
}

// ValidateDelete allows every deletion (the webhook is not registered for deletes).
func (v *Validator) ValidateDelete(context.Context, *nmv1beta1.NodeMaintenance) (admission.Warnings, error) {
	return nil, nil
}

// observeCreate reads what decideCreate needs, as far as it needs it.
func (v *Validator) observeCreate(ctx context.Context, nodeName string) (createFacts, error) {
	var f createFacts
	node := &corev1.Node{}
	switch err := v.reader.Get(ctx, client.ObjectKey{Name: nodeName}, node); {
	case apierrors.IsNotFound(err):
		return f, nil
	case err != nil:
		return f, fmt.Errorf("could not get node for validating spec.NodeName, please try again: %w", err)
	}
	f.node = node
	list := &nmv1beta1.NodeMaintenanceList{}
	if err := v.reader.List(ctx, list); err != nil {
		return f, fmt.Errorf("could not list NodeMaintenances for validating spec.NodeName, please try again: %w", err)
	}
	f.maintenances = list.Items
	if !nodeutil.IsControlPlane(node) {
		return f, nil
	}
	var err error
	if f.openShift, err = v.isOpenShift(ctx); err != nil {
		return f, fmt.Errorf("could not tell whether the cluster is OpenShift for master/control-plane quorum validation, please try again: %w", err)
	}
	if f.openShift {
		f.quorum, err = v.observeQuorum(ctx)
	}
	return f, err
}

// observeQuorum reads the etcd budgets and, when one alone allows no disruption, its pods.
func (v *Validator) observeQuorum(ctx context.Context) (quorumFacts, error) {
	var q quorumFacts
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := v.reader.List(ctx, pdbs, client.InNamespace(nodeutil.EtcdNamespace)); err != nil {
		return q, fmt.Errorf("could not list the etcd quorum guard PodDisruptionBudgets in %s, please try again: %w", nodeutil.EtcdNamespace, err)
	}
	q.pdbs = pdbs.Items
	if len(q.pdbs) != 1 || q.pdbs[0].Status.DisruptionsAllowed >= 1 {
		return q, nil
	}
	pdb := q.pdbs[0]
	// medik8s's reading of the selector: its labels as a set (no selector: every pod of the namespace).
	set, err := metav1.LabelSelectorAsMap(pdb.Spec.Selector)
	if err != nil {
		return q, fmt.Errorf("could not parse the selector of PodDisruptionBudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	pods := &corev1.PodList{}
	if err := v.reader.List(ctx, pods, client.InNamespace(nodeutil.EtcdNamespace), client.MatchingLabels(set)); err != nil {
		return q, fmt.Errorf("could not list the etcd guard pods in %s, please try again: %w", nodeutil.EtcdNamespace, err)
	}
	q.guardPods = pods.Items
	return q, nil
}
