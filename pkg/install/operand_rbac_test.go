package install_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/nodemaintenance"
	"github.com/machine-api-operator/machine-api-operator/pkg/install"
	"github.com/machine-api-operator/machine-api-operator/pkg/names"
)

// leaseNamespace is where the NodeMaintenance controller holds node leases.
const leaseNamespace = nodemaintenance.DefaultLeaseNamespace

// leaseRBACFile holds the operand's Role in leaseNamespace.
const leaseRBACFile = prefix + "09_lease-rbac.yaml"

// The operand's identity: its ServiceAccount, which third-party provider
// containers share.
var (
	operandUser   = "system:serviceaccount:" + namespace + ":" + operandRoleName
	operandGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
)

// operandAccess is every request the operand containers make (grep the
// controllers' client calls; keep in sync): node lifecycle, drains, the
// Machine API in its namespace, leader election there, NodeMaintenances
// and their node leases in leaseNamespace.
func operandAccess() []access {
	var out []access
	add := func(verbs []string, group, resource, sub, ns, name string) {
		for _, v := range verbs {
			out = append(out, access{Verb: v, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name})
		}
	}
	read := []string{"list", "watch"}
	// Nodes: linked and labelled (nodelink), cordoned, deleted with their
	// Machine (kubemark registers them: kubemarkAccess).
	add(read, "", "nodes", "", "", "")
	add([]string{"get", "update", "patch", "delete"}, "", "nodes", "", "", "node-1")
	// Draining: pods of every namespace, evicted (deleted past a timeout),
	// their DaemonSets and PodDisruptionBudgets.
	add(read, "", "pods", "", "", "")
	add([]string{"delete"}, "", "pods", "", "default", "p")
	add([]string{"create"}, "", "pods", "eviction", "default", "p")
	add([]string{"get"}, "apps", "daemonsets", "", "default", "ds")
	add(read, "policy", "poddisruptionbudgets", "", "", "")
	// Webhooks default by the platform.
	add([]string{"get", "list", "watch"}, "config.openshift.io", "infrastructures", "", "", "cluster")
	// Azure's public-IP rule reads the DNS config; the credentials warning
	// reads Secrets' metadata in the operand namespace.
	add([]string{"get", "list", "watch"}, "config.openshift.io", "dnses", "", "", "cluster")
	add([]string{"get", "list", "watch"}, "", "secrets", "", namespace, "")
	for _, ns := range []string{"default", namespace} {
		add([]string{"create"}, "", "events", "", ns, "")
		add([]string{"create"}, "events.k8s.io", "events", "", ns, "")
		add([]string{"patch"}, "", "events", "", ns, "e")
		add([]string{"patch"}, "events.k8s.io", "events", "", ns, "e")
	}
	add([]string{"create"}, "authentication.k8s.io", "tokenreviews", "", "", "")
	add([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "", "", "")
	// NodeMaintenance.
	const nm = "nodemaintenance.medik8s.io"
	add(read, nm, "nodemaintenances", "", "", "")
	add([]string{"get", "update", "patch"}, nm, "nodemaintenances", "", "", "m")
	add([]string{"update", "patch"}, nm, "nodemaintenances", "status", "", "m") // patch: server-side apply
	add([]string{"update"}, nm, "nodemaintenances", "finalizers", "", "m")
	// The Machine API in the operand namespace.
	const machine = "machine.openshift.io"
	for _, r := range []string{"machines", "machinesets", "machinedeployments"} {
		add(read, machine, r, "", namespace, "")
		add([]string{"create"}, machine, r, "", namespace, "")
		add([]string{"get", "update", "patch", "delete"}, machine, r, "", namespace, "x")
		add([]string{"update", "patch"}, machine, r, "status", namespace, "x")
		add([]string{"update"}, machine, r, "finalizers", namespace, "x")
	}
	add(read, machine, "machinehealthchecks", "", namespace, "")
	// Orphan collection confirms in any namespace that an instance's Machine is gone.
	add([]string{"list"}, machine, "machines", "", "another-installation", "")
	add([]string{"update", "patch"}, machine, "machinehealthchecks", "status", namespace, "x")
	add([]string{"get"}, "", "secrets", "", namespace, "worker-user-data")
	add([]string{"get"}, "", "configmaps", "", namespace, "c")
	// IPAM (vSphere static IPs): claims created, adopted, released; their addresses read.
	const ipam = "ipam.cluster.x-k8s.io"
	add(read, ipam, "ipaddressclaims", "", namespace, "")
	add([]string{"create"}, ipam, "ipaddressclaims", "", namespace, "")
	add([]string{"get", "update"}, ipam, "ipaddressclaims", "", namespace, "worker-0-claim-0-0")
	add(read, ipam, "ipaddresses", "", namespace, "")
	add([]string{"get"}, ipam, "ipaddresses", "", namespace, "worker-0-claim-0-0-ip")
	// Leader election in the operand namespace.
	add([]string{"create"}, "coordination.k8s.io", "leases", "", namespace, "")
	add([]string{"get", "update"}, "coordination.k8s.io", "leases", "", namespace, names.MachineSetLeaseName)
	// Node leases shared with NodeHealthCheck and Self Node Remediation.
	add(read, "coordination.k8s.io", "leases", "", leaseNamespace, "")
	add([]string{"create"}, "coordination.k8s.io", "leases", "", leaseNamespace, "")
	add([]string{"get", "update", "delete"}, "coordination.k8s.io", "leases", "", leaseNamespace, nodemaintenance.LeaseName("node-1"))
	return out
}

// kubemarkAccess is what only the kubemark provider (this project's
// machine controller) does: register a Node per Machine.
var kubemarkAccess = access{Verb: "create", Resource: "nodes"}

// vsphereAccess is what the vSphere provider (this project's machine
// controller on VSphere) calls besides the machine controller's requests:
// its credentials and user-data Secrets (get), the Infrastructure, the cloud
// config where OpenShift reads it (openshift-config-managed/kube-cloud-config)
// and the cloud-provider-config the Infrastructure names (the fallback), the
// Machine's Node (volumes attached) and Machine patches (instance-state
// annotation, region/zone labels).
func vsphereAccess() []access {
	return []access{
		{Verb: "get", Resource: "secrets", Namespace: namespace, Name: "vsphere-cloud-credentials"},
		{Verb: "get", Resource: "secrets", Namespace: namespace, Name: "worker-user-data"},
		{Verb: "get", Group: "config.openshift.io", Resource: "infrastructures", Name: "cluster"},
		{Verb: "get", Resource: "configmaps", Namespace: "openshift-config-managed", Name: "kube-cloud-config"},
		{Verb: "get", Resource: "configmaps", Namespace: "openshift-config", Name: "cloud-provider-config"},
		{Verb: "get", Resource: "nodes", Name: "node-1"},
		{Verb: "patch", Group: "machine.openshift.io", Resource: "machines", Namespace: namespace, Name: "x"},
	}
}

// operandForbidden are requests the operand's ServiceAccount must not be
// able to make: a provider container sharing it could otherwise take over
// the control plane's leader elections, or create namespaces.
func operandForbidden() []access {
	const coord = "coordination.k8s.io"
	return []access{
		{Verb: "create", Group: coord, Resource: "leases", Namespace: "kube-system"},
		{Verb: "update", Group: coord, Resource: "leases", Namespace: "kube-system", Name: "kube-controller-manager"},
		{Verb: "get", Group: coord, Resource: "leases", Namespace: "kube-system", Name: "kube-scheduler"},
		{Verb: "delete", Group: coord, Resource: "leases", Namespace: "default", Name: "x"},
		{Verb: "list", Group: coord, Resource: "leases"},
		{Verb: "patch", Group: coord, Resource: "leases", Namespace: leaseNamespace, Name: "node-1"},
		{Verb: "delete", Group: coord, Resource: "leases", Namespace: namespace, Name: names.MachineSetLeaseName},
		{Verb: "create", Resource: "namespaces"},
		{Verb: "get", Resource: "namespaces", Name: leaseNamespace},
		{Verb: "delete", Resource: "namespaces", Name: leaseNamespace},
		{Verb: "get", Group: "apps", Resource: "replicasets", Namespace: "default", Name: "rs"},
		{Verb: "get", Group: "apps", Resource: "statefulsets", Namespace: "default", Name: "ss"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "x"},
		{Verb: "create", Resource: "pods", Namespace: "default"},
		{Verb: "update", Group: "config.openshift.io", Resource: "infrastructures", Name: "cluster"},
		{Verb: "create", Group: "nodemaintenance.medik8s.io", Resource: "nodemaintenances"},
		{Verb: "update", Group: "machine.openshift.io", Resource: "machines", Namespace: "default", Name: "x"},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings", Namespace: namespace},
		{Verb: "update", Resource: "events", Namespace: "default", Name: "e"},
		{Verb: "patch", Group: "machine.openshift.io", Resource: "machinehealthchecks", Namespace: namespace, Name: "x"},
		// IPAM: claims are deleted by the garbage collector, addresses written by the IPAM provider only.
		{Verb: "delete", Group: "ipam.cluster.x-k8s.io", Resource: "ipaddressclaims", Namespace: namespace, Name: "x"},
		{Verb: "create", Group: "ipam.cluster.x-k8s.io", Resource: "ipaddressclaims", Namespace: "default"},
		{Verb: "update", Group: "ipam.cluster.x-k8s.io", Resource: "ipaddresses", Namespace: namespace, Name: "x"},
		{Verb: "create", Group: "ipam.cluster.x-k8s.io", Resource: "ipaddresses", Namespace: namespace},
		// The operator's Lease and images: taking either would let a
		// provider image stop the operator or choose what it runs.
		{Verb: "get", Group: coord, Resource: "leases", Namespace: namespace, Name: names.OperatorLeaseName},
		{Verb: "update", Group: coord, Resource: "leases", Namespace: namespace, Name: names.OperatorLeaseName},
		{Verb: "update", Resource: "configmaps", Namespace: namespace, Name: names.ImagesConfigMapName},
		// The cloud config the vSphere provider reads is read-only to it.
		{Verb: "update", Resource: "configmaps", Namespace: "openshift-config-managed", Name: "kube-cloud-config"},
		{Verb: "create", Resource: "configmaps", Namespace: namespace},
		{Verb: "delete", Resource: "configmaps", Namespace: namespace, Name: names.ImagesConfigMapName},
		// No way to more rights.
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: operandRoleName},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: operandRoleName},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "clusteroperators.config.openshift.io"},
		{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "machine-api"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: namespace, Name: operatorName},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: namespace, Name: operatorName},
	}
}

// operandRBAC is what the operand's ServiceAccount holds: the install's
// ClusterRole, Roles and their bindings.
type operandRBAC struct {
	cluster []rbacv1.PolicyRule
	byNS    map[string][]rbacv1.PolicyRule
}

func (r operandRBAC) allows(a access) bool {
	return allows(append(slices.Clone(r.cluster), r.byNS[a.Namespace]...), a)
}

// controllersRBACFile holds the operand's RBAC (every platform's) and the
// guard policy.
const controllersRBACFile = prefix + "09_controllers-rbac.yaml"

// loadOperandRBAC collects the operand's roles from the payload files in
// files, checking that each is bound to the operand's ServiceAccount.
func loadOperandRBAC(t *testing.T, ms []install.Manifest, files ...string) operandRBAC {
	t.Helper()
	r := operandRBAC{byNS: map[string][]rbacv1.PolicyRule{}}
	var objs []client.Object
	for _, m := range ms {
		if slices.Contains(files, m.File) {
			objs = append(objs, decodeStrict(t, m).(client.Object))
		}
	}
	bound := map[string]bool{}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: operandRoleName, Namespace: namespace}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			if slices.Contains(o.Subjects, sa) {
				bound["ClusterRole/"+o.RoleRef.Name] = true
			}
		case *rbacv1.RoleBinding:
			if slices.Contains(o.Subjects, sa) && o.RoleRef.Kind == "Role" {
				bound[o.Namespace+"/"+o.RoleRef.Name] = true
			}
		}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			if !bound["ClusterRole/"+o.Name] {
				continue // aggregated into others' roles (cluster-reader)
			}
			r.cluster = append(r.cluster, o.Rules...)
		case *rbacv1.Role:
			if !bound[o.Namespace+"/"+o.Name] {
				t.Errorf("Role %s/%s is not bound to the operand", o.Namespace, o.Name)
			}
			r.byNS[o.Namespace] = append(r.byNS[o.Namespace], o.Rules...)
		}
	}
	return r
}

// operandLeaseNames are the leader-election Leases of every operand
// container: this project's binaries and each platform's provider image
// (OpenShift's pattern cluster-api-provider-<provider>-leader).
func operandLeaseNames() []string {
	out := []string{names.MachineSetLeaseName, names.NodeLinkLeaseName, names.HealthCheckLeaseName, names.KubemarkLeaseName}
	for _, p := range []string{"vsphere", "aws", "azure", "gcp", "openstack", "baremetal", "ibmcloud", "powervs", "nutanix"} {
		out = append(out, "cluster-api-provider-"+p+"-leader")
	}
	return out
}

// TestOperandRBACLeastPrivilege: the operand's ServiceAccount may do what its
// controllers do on every platform and nothing in operandForbidden; in
// particular it holds Leases only in its own namespace (by name) and in the
// lease namespace, writes no ConfigMap, and creates no namespaces or Nodes
// (the install ships the lease namespace; kubemark's Nodes come with config/).
// Breaks if: a rule of 09_controllers-rbac.yaml is widened or dropped.
func TestOperandRBACLeastPrivilege(t *testing.T) {
	ms := loadPayload(t)
	r := loadOperandRBAC(t, ms, controllersRBACFile, leaseRBACFile)
	if len(r.byNS[leaseNamespace]) == 0 || len(r.byNS[namespace]) == 0 || len(r.cluster) == 0 {
		t.Fatalf("missing operand roles: cluster %d rules, by namespace %v", len(r.cluster), r.byNS)
	}
	for _, a := range operandAccess() {
		if !r.allows(a) {
			t.Errorf("the operand cannot %s", a)
		}
	}
	for _, name := range operandLeaseNames() {
		for _, v := range []string{"get", "update"} {
			if a := (access{Verb: v, Group: "coordination.k8s.io", Resource: "leases", Namespace: namespace, Name: name}); !r.allows(a) {
				t.Errorf("the operand cannot %s", a)
			}
		}
	}
	if r.allows(kubemarkAccess) {
		t.Errorf("without config/, the operand can %s: only kubemark registers Nodes", kubemarkAccess)
	}
	withOpenShift := loadOperandRBAC(t, ms, controllersRBACFile, leaseRBACFile, operandRBACFile)
	for _, a := range vsphereAccess() {
		if !withOpenShift.allows(a) {
			t.Errorf("the vSphere provider cannot %s", a)
		}
	}
	for _, a := range operandForbidden() {
		if r.allows(a) || withOpenShift.allows(a) {
			t.Errorf("the operand can %s, which it does not need", a)
		}
	}
	for i, rule := range r.cluster {
		if slices.Contains(rule.Resources, "leases") || slices.Contains(rule.Resources, "namespaces") {
			t.Errorf("ClusterRole rule %d grants %v cluster-wide", i, rule.Resources)
		}
	}
	for i, rule := range r.byNS[namespace] {
		if slices.Contains(rule.Resources, "leases") && !slices.Equal(rule.Verbs, []string{"create"}) &&
			!slices.Equal(rule.ResourceNames, operandLeaseNames()) {
			t.Errorf("Role rule %d grants %v on Leases %v, want get/update on exactly %v", i, rule.Verbs, rule.ResourceNames, operandLeaseNames())
		}
	}
	// The guard policy refuses a create of any other Lease name: its list is
	// the Role's.
	vap := typed[*admissionregistrationv1.ValidatingAdmissionPolicy](t, ms, "ValidatingAdmissionPolicy", "machine-api-controllers-guard")
	var leaseRule string
	for _, v := range vap.Spec.Validations {
		if strings.Contains(v.Expression, "leases") {
			leaseRule = v.Expression
		}
	}
	for _, name := range operandLeaseNames() {
		if !strings.Contains(leaseRule, "'"+name+"'") {
			t.Errorf("the guard policy's Lease rule does not allow %s: %s", name, leaseRule)
		}
	}
	if got, want := strings.Count(leaseRule, "-leader'"), len(operandLeaseNames()); got != want {
		t.Errorf("the guard policy's Lease rule names %d Leases, want %d: %s", got, want, leaseRule)
	}
	// The install ships the lease namespace (typed fails when it does not).
	typed[*corev1.Namespace](t, ms, "Namespace", leaseNamespace)
}

// reviewer asks the API server, by SubjectAccessReview, whether user (in
// groups) may make a request.
func reviewer(ctx context.Context, t *testing.T, c client.Client, user string, groups []string) func(access) bool {
	return func(a access) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource,
				Namespace: a.Namespace, Name: a.Name,
			},
		}}
		if err := c.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
}

// checkOperandAuthorization asks the API server, once the operand's roles
// are applied, whether the operand's ServiceAccount may make each request
// of operandAccess (yes) and of operandForbidden (no): what
// `kubectl auth can-i --as=system:serviceaccount:openshift-machine-api:machine-api-controllers`
// answers.
func checkOperandAuthorization(ctx context.Context, t *testing.T, c client.Client, cfg *rest.Config) {
	sar := reviewer(ctx, t, c, operandUser, operandGroups)
	checkAccess(t, "the operand", sar, operandAccess(), operandForbidden())
	// The same questions as a user asks them.
	for _, q := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "leases", "-n", "kube-system"}, "no"},
		{[]string{"update", "leases/kube-controller-manager", "-n", "kube-system"}, "no"},
		{[]string{"create", "namespaces"}, "no"},
		{[]string{"create", "leases", "-n", leaseNamespace}, "yes"},
		{[]string{"update", "leases/" + names.MachineSetLeaseName, "-n", namespace}, "yes"},
	} {
		if got := kubectlCanI(t, cfg, operandUser, q.args...); got != q.want {
			t.Errorf("kubectl auth can-i --as=%s %s = %q, want %q", operandUser, strings.Join(q.args, " "), got, q.want)
		}
	}
}

// TestVanillaOperandRBAC: the root kustomization ships the lease namespace
// and the operand's Role there, and config/ (kubemark) adds only what the
// kubemark provider does with nodes and their heartbeat Leases.
func TestVanillaOperandRBAC(t *testing.T) {
	root := kustomizeBuild(t, ".")
	var found []string
	for _, m := range root {
		if m.Object.GetNamespace() == leaseNamespace || m.Object.GetName() == leaseNamespace {
			found = append(found, m.Object.GetKind())
		}
	}
	slices.Sort(found)
	if want := []string{"Namespace", "Role", "RoleBinding"}; !slices.Equal(found, want) {
		t.Errorf("the root kustomization has %v of %s, want %v", found, leaseNamespace, want)
	}

	r := loadOperandRBAC(t, loadPayload(t), controllersRBACFile, leaseRBACFile)
	for _, m := range kustomizeBuild(t, "config") {
		switch m.Object.GetKind() {
		case "ClusterRole":
			r.cluster = append(r.cluster, decodeStrict(t, m).(*rbacv1.ClusterRole).Rules...)
		case "Role":
			role := decodeStrict(t, m).(*rbacv1.Role)
			r.byNS[role.Namespace] = append(r.byNS[role.Namespace], role.Rules...)
		}
	}
	const nodeLeases = "kube-node-lease"
	need := []access{kubemarkAccess, {Verb: "patch", Resource: "nodes", Subresource: "status", Name: "node-1"}}
	for _, v := range []string{"get", "update", "delete"} {
		need = append(need, access{Verb: v, Group: "coordination.k8s.io", Resource: "leases", Namespace: nodeLeases, Name: "node-1"})
	}
	need = append(need, access{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: nodeLeases})
	for _, a := range append(need, operandAccess()...) {
		if !r.allows(a) {
			t.Errorf("with config/, the kubemark operand cannot %s", a)
		}
	}
	forbidden := append(operandForbidden(),
		access{Verb: "update", Resource: "nodes", Subresource: "status", Name: "node-1"},
		access{Verb: "list", Group: "coordination.k8s.io", Resource: "leases", Namespace: nodeLeases})
	for _, a := range forbidden {
		if r.allows(a) {
			t.Errorf("with config/, the kubemark operand can %s, which it does not need", a)
		}
	}
}

// kubectlCanI runs `kubectl auth can-i --as=<as> args...` against the API
// server of cfg and returns its answer.
func kubectlCanI(t *testing.T, cfg *rest.Config, as string, args ...string) string {
	t.Helper()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kubeconfig.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kubeconfig.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, "kubectl"), append([]string{"--kubeconfig", path, "auth", "can-i", "--as=" + as}, args...)...)
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl auth can-i %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
