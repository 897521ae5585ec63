package install_test

import (
	"encoding/json"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	securityv1 "github.com/openshift/api/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
)

// The cloud credential operator's API (github.com/openshift/cloud-credential-operator,
// not a dependency): the subset of CredentialsRequest the payload uses, for
// strict decoding.
const (
	credentialsRequestGroup     = "cloudcredential.openshift.io"
	credentialsRequestNamespace = "openshift-cloud-credential-operator"
)

type credentialsRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ServiceAccountNames []string               `json:"serviceAccountNames,omitempty"`
		SecretRef           corev1.ObjectReference `json:"secretRef"`
		// ProviderSpec is the cloud's own kind (AWSProviderSpec, ...).
		ProviderSpec json.RawMessage `json:"providerSpec"`
	} `json:"spec"`
}

func decodeCredentialsRequestStrict(t testing.TB, what string, data []byte, out ...*credentialsRequest) {
	t.Helper()
	target := &credentialsRequest{}
	if len(out) == 1 {
		target = out[0]
	}
	unmarshalStrict(t, what, data, target)
	if target.Kind != "CredentialsRequest" || target.APIVersion != credentialsRequestGroup+"/v1" {
		t.Fatalf("%s: unexpected %s %s", what, target.APIVersion, target.Kind)
	}
}

// TestCredentialsRequests: one CredentialsRequest per cloud platform, with
// OpenShift's names, so the cloud credential operator provides the Secrets
// the provider images read under the names they read.
func TestCredentialsRequests(t *testing.T) {
	want := map[string]struct {
		secret, kind string
		// serviceAccount: the provider may use short-lived credentials of
		// the operand's ServiceAccount (bound-sa-token).
		serviceAccount bool
	}{
		"openshift-machine-api-aws":       {"aws-cloud-credentials", "AWSProviderSpec", true},
		"openshift-machine-api-azure":     {"azure-cloud-credentials", "AzureProviderSpec", true},
		"openshift-machine-api-gcp":       {"gcp-cloud-credentials", "GCPProviderSpec", true},
		"openshift-machine-api-openstack": {"openstack-cloud-credentials", "OpenStackProviderSpec", false},
		"openshift-machine-api-vsphere":   {"vsphere-cloud-credentials", "VSphereProviderSpec", false},
		"openshift-machine-api-ibmcloud":  {"ibmcloud-credentials", "IBMCloudProviderSpec", false},
		"openshift-machine-api-powervs":   {"powervs-credentials", "IBMCloudPowerVSProviderSpec", false},
		"openshift-machine-api-nutanix":   {"nutanix-credentials", "NutanixProviderSpec", false},
	}
	seen := map[string]bool{}
	for _, m := range loadPayload(t) {
		if m.Object.GetKind() != "CredentialsRequest" {
			continue
		}
		cr := &credentialsRequest{}
		decodeCredentialsRequestStrict(t, m.String(), toJSON(t, m.Object.Object), cr)
		w, ok := want[cr.Name]
		if !ok {
			t.Errorf("%s: unexpected CredentialsRequest", m)
			continue
		}
		seen[cr.Name] = true
		if cr.Namespace != credentialsRequestNamespace {
			t.Errorf("%s: namespace %q, want %s (the cloud credential operator reads only its own)", m, cr.Namespace, credentialsRequestNamespace)
		}
		if cr.Spec.SecretRef.Name != w.secret || cr.Spec.SecretRef.Namespace != namespace {
			t.Errorf("%s: secretRef %s/%s, want %s/%s", m, cr.Spec.SecretRef.Namespace, cr.Spec.SecretRef.Name, namespace, w.secret)
		}
		var ps struct{ APIVersion, Kind string }
		if err := json.Unmarshal(cr.Spec.ProviderSpec, &ps); err != nil || ps.Kind != w.kind || ps.APIVersion != credentialsRequestGroup+"/v1" {
			t.Errorf("%s: providerSpec %s %s (%v), want %s", m, ps.APIVersion, ps.Kind, err, w.kind)
		}
		wantSA := []string(nil)
		if w.serviceAccount {
			wantSA = []string{render.ControllersServiceAccountName}
		}
		if !slices.Equal(cr.Spec.ServiceAccountNames, wantSA) {
			t.Errorf("%s: serviceAccountNames %v, want %v", m, cr.Spec.ServiceAccountNames, wantSA)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no CredentialsRequest %s", name)
		}
	}
}

// TestOpenShiftIntegration: the trusted CA ConfigMap the operand mounts, the
// termination handler's SCC and MachineHealthCheck, each with OpenShift's
// name and meaning and consistent with what the operator renders.
func TestOpenShiftIntegration(t *testing.T) {
	ms := loadPayload(t)

	t.Run("trusted CA bundle", func(t *testing.T) {
		cm := typed[*corev1.ConfigMap](t, ms, "ConfigMap", names.TrustedCAConfigMapName)
		if cm.Namespace != namespace || cm.Labels["config.openshift.io/inject-trusted-cabundle"] != "true" || len(cm.Data) != 0 {
			t.Errorf("ConfigMap %s/%s labels %v data %v: want the injection label and no data (the network operator fills it)",
				cm.Namespace, cm.Name, cm.Labels, cm.Data)
		}
		// The operand mounts what the payload ships.
		var d *appsv1.Deployment
		for _, o := range renderAWS(t) {
			if dd, ok := o.(*appsv1.Deployment); ok {
				d = dd
			}
		}
		if d == nil {
			t.Fatal("the AWS render has no Deployment")
		}
		found := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
				found = len(v.ConfigMap.Items) == 1 && v.ConfigMap.Items[0].Key == names.TrustedCAKey && ptr.Deref(v.ConfigMap.Optional, false)
			}
		}
		if !found {
			t.Errorf("the AWS operand does not mount key %s of ConfigMap %s (optional)", names.TrustedCAKey, cm.Name)
		}
	})

	t.Run("termination handler SCC", func(t *testing.T) {
		scc := typed[*securityv1.SecurityContextConstraints](t, ms, "SecurityContextConstraints", config.TerminationHandlerName)
		sa := "system:serviceaccount:" + namespace + ":" + render.TerminationHandlerServiceAccountName
		if !slices.Equal(scc.Users, []string{sa}) || len(scc.Groups) != 0 {
			t.Errorf("SCC users %v groups %v, want only %s", scc.Users, scc.Groups, sa)
		}
		if scc.AllowPrivilegedContainer || scc.AllowHostPID || scc.AllowHostIPC || scc.AllowHostPorts || ptr.Deref(scc.AllowPrivilegeEscalation, true) {
			t.Errorf("SCC allows more than host network and hostPath: %+v", scc)
		}
		// The rendered DaemonSet fits it: host network, hostPath volumes
		// only, RuntimeDefault seccomp, no privilege escalation.
		var ds *corev1.PodTemplateSpec
		for _, o := range renderAWS(t) {
			if d, ok := o.(*appsv1.DaemonSet); ok && d.Name == config.TerminationHandlerName {
				ds = &d.Spec.Template
			}
		}
		if ds == nil {
			t.Fatal("the AWS render has no termination handler DaemonSet")
		}
		if got := ds.Annotations["openshift.io/required-scc"]; got != scc.Name {
			t.Errorf("the DaemonSet requests SCC %q, want %s", got, scc.Name)
		}
		if ds.Spec.HostNetwork != scc.AllowHostNetwork {
			t.Errorf("hostNetwork %v, SCC allows %v", ds.Spec.HostNetwork, scc.AllowHostNetwork)
		}
		for _, v := range ds.Spec.Volumes {
			if v.HostPath == nil || !slices.Contains(scc.Volumes, securityv1.FSTypeHostPath) {
				t.Errorf("volume %s is not a hostPath the SCC allows", v.Name)
			}
		}
		if !slices.Contains(scc.SeccompProfiles, "runtime/default") {
			t.Errorf("SCC seccompProfiles %v: the pods use RuntimeDefault", scc.SeccompProfiles)
		}
	})

	t.Run("termination handler MachineHealthCheck", func(t *testing.T) {
		mhc := typed[*machinev1beta1.MachineHealthCheck](t, ms, "MachineHealthCheck", config.TerminationHandlerName)
		if mhc.Namespace != namespace || !slices.Equal(mapKeys(mhc.Spec.Selector.MatchLabels), []string{render.InterruptibleInstanceLabel}) {
			t.Errorf("MachineHealthCheck %s/%s selects %v, want Machines labelled %s", mhc.Namespace, mhc.Name, mhc.Spec.Selector, render.InterruptibleInstanceLabel)
		}
		if mhc.Spec.MaxUnhealthy == nil || *mhc.Spec.MaxUnhealthy != intstr.FromString("100%") {
			t.Errorf("maxUnhealthy %v, want 100%%", mhc.Spec.MaxUnhealthy)
		}
		if mhc.Spec.NodeStartupTimeout == nil || mhc.Spec.NodeStartupTimeout.Duration != 0 {
			t.Errorf("nodeStartupTimeout %v, want 0 (disabled)", mhc.Spec.NodeStartupTimeout)
		}
		if want := []machinev1beta1.UnhealthyCondition{{Type: "Terminating", Status: corev1.ConditionTrue, Timeout: metav1.Duration{}}}; !slices.Equal(mhc.Spec.UnhealthyConditions, want) {
			t.Errorf("unhealthyConditions %+v, want %+v", mhc.Spec.UnhealthyConditions, want)
		}
	})
}

func mapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
