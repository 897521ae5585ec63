package install_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/apply"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/certs"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
)

const operandRoleName = render.ControllersServiceAccountName

// access is one API request the operator makes, as the authorizer sees it.
// Namespace "" is a cluster-scoped object or a request across namespaces;
// Name "" is a request without a name (create by POST, list, watch).
type access struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (a access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	where := ""
	if a.Namespace != "" {
		where = " in " + a.Namespace
	}
	if a.Name != "" {
		where += " named " + a.Name
	}
	return a.Verb + " " + r + where
}

// operatorAccess is every request the operator makes besides applying and
// pruning what it renders (which TestOperatorRBACCoversOperand derives from
// render.Render): its inputs, the ClusterOperator, events, leader election,
// webhook certificates. Keep it in sync with pkg/operator.
func operatorAccess() []access {
	var out []access
	add := func(verbs []string, group, resource, sub, ns, name string) {
		for _, v := range verbs {
			out = append(out, access{Verb: v, Group: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name})
		}
	}
	read := []string{"list", "watch"}
	const cfg = "config.openshift.io"
	for _, r := range []string{"infrastructures", "proxies", "featuregates", "apiservers", "clusterversions"} {
		add(read, cfg, r, "", "", "")
		add([]string{"get"}, cfg, r, "", "", config.ClusterConfigName)
	}
	add(read, cfg, "clusteroperators", "", "", "")
	add([]string{"create"}, cfg, "clusteroperators", "", "", "")
	add([]string{"get"}, cfg, "clusteroperators", "", "", config.ClusterOperatorName)
	add([]string{"update"}, cfg, "clusteroperators", "status", "", config.ClusterOperatorName)
	// Events of the cluster-scoped ClusterOperator go to "default"; leader
	// election events to the operator's namespace.
	for _, ns := range []string{"default", namespace} {
		for _, g := range []string{"", "events.k8s.io"} {
			add([]string{"create"}, g, "events", "", ns, "")
			add([]string{"patch"}, g, "events", "", ns, "some-event")
		}
	}
	add([]string{"create"}, "coordination.k8s.io", "leases", "", namespace, "")
	add([]string{"get", "update"}, "coordination.k8s.io", "leases", "", namespace, config.OperatorLeaseName)
	// The metrics endpoint authenticates and authorizes scrapers.
	// Whether another installation's namespace still exists (package apply's
	// checkOwner).
	add([]string{"get"}, "", "namespaces", "", "", "other-installation")
	add([]string{"create"}, "authentication.k8s.io", "tokenreviews", "", "", "")
	add([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews", "", "", "")
	// The trusted CA bundle, read from an informer of that name (a field
	// selector on metadata.name is authorized as the resourceName).
	add(append(read, "get"), "", "configmaps", "", namespace, names.TrustedCAConfigMapName)
	// The metrics collector's informers (Machines, MachineSets).
	add(read, "machine.openshift.io", "machines", "", namespace, "")
	add(read, "machine.openshift.io", "machinesets", "", namespace, "")
	// Webhook serving certificates (certs manager), each watched by name.
	add([]string{"create"}, "", "secrets", "", namespace, "")
	for _, name := range certs.SecretNames() {
		add([]string{"list", "watch", "get", "update", "patch", "delete"}, "", "secrets", "", namespace, name)
	}
	return out
}

// forbiddenAccess are requests the operator must not be able to make.
func forbiddenAccess() []access {
	return []access{
		{Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "machines.machine.openshift.io"},
		{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: "any"},
		{Verb: "list", Resource: "secrets", Namespace: ""},
		{Verb: "create", Resource: "pods", Namespace: namespace},
		{Verb: "update", Resource: "nodes", Name: "node-1"},
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "default", Name: "p"},
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "roles", Namespace: "kube-system", Name: operandRoleName},
		{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "kube-system", Name: "x"},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: namespace, Name: operandRoleName},
		{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: namespace, Name: "machine-api-controllers-leader"},
		{Verb: "update", Group: "config.openshift.io", Resource: "infrastructures", Name: config.ClusterConfigName},
		// The ClusterOperator is written through its status only.
		{Verb: "update", Group: "config.openshift.io", Resource: "clusteroperators", Name: config.ClusterOperatorName},
		{Verb: "patch", Group: "config.openshift.io", Resource: "clusteroperators", Subresource: "status", Name: config.ClusterOperatorName},
		{Verb: "delete", Group: "config.openshift.io", Resource: "clusteroperators", Name: config.ClusterOperatorName},
		{Verb: "update", Group: "events.k8s.io", Resource: "events", Namespace: "default", Name: "some-event"},
		// Namespaces come with the install; the operator creates none.
		{Verb: "create", Resource: "namespaces"},
		{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"},
		{Verb: "update", Group: "machine.openshift.io", Resource: "machines", Namespace: namespace, Name: "m"},
		{Verb: "list", Group: "machine.openshift.io", Resource: "machines", Namespace: ""},
		{Verb: "delete", Group: "machine.openshift.io", Resource: "machinesets", Namespace: namespace, Name: "ms"},
		// No RBAC write, no escalate or bind: the operand's RBAC ships in
		// install/, so the operator's token grants nothing it does not hold.
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "clusterroles", Name: operandRoleName},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: operandRoleName},
		{Verb: "escalate", Group: rbacv1.GroupName, Resource: "roles", Namespace: namespace, Name: operandRoleName},
		{Verb: "bind", Group: rbacv1.GroupName, Resource: "roles", Namespace: namespace, Name: operandRoleName},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "clusterroles", Name: operandRoleName},
		{Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings", Namespace: namespace},
		{Verb: "patch", Group: rbacv1.GroupName, Resource: "roles", Namespace: namespace, Name: operandRoleName},
		{Verb: "create", Resource: "serviceaccounts", Namespace: namespace},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: namespace, Name: operandRoleName},
		// Only the CRDs, webhook configurations and policies it owns.
		{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "clusteroperators.config.openshift.io"},
		{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "widgets.example.com"},
		{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "another-component"},
		{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "another-component"},
		{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies", Name: "machine-api-controllers-guard"},
		// Secrets only by name: no list of the namespace, no cloud credentials.
		{Verb: "list", Resource: "secrets", Namespace: namespace},
		{Verb: "watch", Resource: "secrets", Namespace: namespace},
		{Verb: "get", Resource: "secrets", Namespace: namespace, Name: "vsphere-cloud-credentials"},
		{Verb: "list", Resource: "configmaps", Namespace: namespace},
		{Verb: "get", Resource: "configmaps", Namespace: namespace, Name: config.ImagesConfigMapName},
	}
}

// operatorRBAC is the payload's RBAC for the operator.
type operatorRBAC struct {
	clusterRole        *rbacv1.ClusterRole
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	role               *rbacv1.Role
	roleBinding        *rbacv1.RoleBinding
}

func loadOperatorRBAC(t testing.TB) operatorRBAC {
	ms := loadPayload(t)
	return operatorRBAC{
		clusterRole:        typed[*rbacv1.ClusterRole](t, ms, "ClusterRole", operatorName),
		clusterRoleBinding: typed[*rbacv1.ClusterRoleBinding](t, ms, "ClusterRoleBinding", operatorName),
		role:               typed[*rbacv1.Role](t, ms, "Role", operatorName),
		roleBinding:        typed[*rbacv1.RoleBinding](t, ms, "RoleBinding", operatorName),
	}
}

// rulesIn are the rules that apply to requests in namespace ns ("" =
// cluster-scoped or across namespaces): the ClusterRole's everywhere, the
// Role's only in its namespace.
func (r operatorRBAC) rulesIn(ns string) []rbacv1.PolicyRule {
	rules := slices.Clone(r.clusterRole.Rules)
	if ns != "" && ns == r.role.Namespace {
		rules = append(rules, r.role.Rules...)
	}
	return rules
}

func (r operatorRBAC) allows(a access) bool { return allows(r.rulesIn(a.Namespace), a) }

// allows tells whether rules grant the request a, by the API server's own
// escalation check (a rule naming exactly the request is covered).
func allows(rules []rbacv1.PolicyRule, a access) bool {
	covered, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{a.rule()})
	return covered
}

// rule is the policy rule granting exactly the request a.
func (a access) rule() rbacv1.PolicyRule {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	r := rbacv1.PolicyRule{Verbs: []string{a.Verb}, APIGroups: []string{a.Group}, Resources: []string{resource}}
	if a.Name != "" {
		r.ResourceNames = []string{a.Name}
	}
	return r
}

// renderFor renders the operand for a platform with the payload's images.
func renderFor(t testing.TB, platform configv1.PlatformStatus, spec configv1.PlatformSpec) []client.Object {
	t.Helper()
	return renderWithGates(t, platform, spec, nil)
}

// renderWithGates renders with the FeatureGate "cluster" enabling gates (none: no FeatureGate).
func renderWithGates(t testing.TB, platform configv1.PlatformStatus, spec configv1.PlatformSpec, gates []configv1.FeatureGateName) []client.Object {
	t.Helper()
	_, images := payloadImages(t, loadPayload(t))
	var fg *configv1.FeatureGate
	if len(gates) > 0 {
		fg = &configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName}}
		details := configv1.FeatureGateDetails{Version: versionSentinel}
		for _, g := range gates {
			details.Enabled = append(details.Enabled, configv1.FeatureGateAttributes{Name: g})
		}
		fg.Status.FeatureGates = []configv1.FeatureGateDetails{details}
	}
	cfg, err := config.Build(config.Inputs{
		FeatureGate:    fg,
		Namespace:      namespace,
		ReleaseVersion: versionSentinel,
		Images:         images,
		Infrastructure: &configv1.Infrastructure{
			ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
			Spec:       configv1.InfrastructureSpec{PlatformSpec: spec},
			Status:     configv1.InfrastructureStatus{PlatformStatus: &platform},
		},
		Webhook: config.WebhookTLS{ServiceCA: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := render.Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderAWS(t testing.TB) []client.Object {
	return renderFor(t,
		configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: "us-east-1"}},
		configv1.PlatformSpec{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformSpec{}})
}

// renderVSphere renders vSphere with the payload's images.json, whose
// clusterAPIControllerVSphere is the operator's image (this project's
// vSphere provider).
func renderVSphere(t testing.TB) []client.Object {
	return renderFor(t,
		configv1.PlatformStatus{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformStatus{}},
		configv1.PlatformSpec{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformSpec{}})
}

// renderVSphereDay2 renders vSphere with VSphereMultiVCenterDay2, which adds the
// failure domain admission policies.
func renderVSphereDay2(t testing.TB) []client.Object {
	return renderWithGates(t,
		configv1.PlatformStatus{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformStatus{}},
		configv1.PlatformSpec{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformSpec{}},
		[]configv1.FeatureGateName{render.FeatureGateVSphereMultiVCenterDay2})
}

func renderKubemark(t testing.TB) []client.Object {
	return renderFor(t,
		configv1.PlatformStatus{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformStatus{}},
		configv1.PlatformSpec{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformSpec{PlatformName: config.KubemarkPlatformName}})
}

// checkCoversOperand returns every way the operator RBAC falls short of
// applying and pruning objs.
func checkCoversOperand(t testing.TB, r operatorRBAC, objs []client.Object) []string {
	t.Helper()
	s := testScheme()
	var problems []string
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, s)
		if err != nil {
			t.Fatal(err)
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resource := plural.Resource
		ns, name := obj.GetNamespace(), obj.GetName()
		need := []access{
			// apply: read the live object (cache: list/watch), then PATCH
			// (a create through apply is authorized as a create of the
			// name); removing others' fields is an UPDATE.
			{Verb: "list", Group: gvk.Group, Resource: resource, Namespace: ns},
			{Verb: "watch", Group: gvk.Group, Resource: resource, Namespace: ns},
			{Verb: "get", Group: gvk.Group, Resource: resource, Namespace: ns, Name: name},
			{Verb: "create", Group: gvk.Group, Resource: resource, Namespace: ns, Name: name},
			{Verb: "patch", Group: gvk.Group, Resource: resource, Namespace: ns, Name: name},
			{Verb: "update", Group: gvk.Group, Resource: resource, Namespace: ns, Name: name},
		}
		if !apply.IsNeverPruned(gvk.GroupKind()) {
			need = append(need, access{Verb: "delete", Group: gvk.Group, Resource: resource, Namespace: ns, Name: name})
		}
		for _, a := range need {
			if !r.allows(a) {
				problems = append(problems, fmt.Sprintf("%s %s: cannot %s", gvk.Kind, name, a))
			}
		}
	}
	return problems
}

// everyRender renders every platform, on OpenShift and on vanilla Kubernetes:
// together, every object the operator may apply.
func everyRender(t testing.TB) []client.Object {
	objs := slices.Concat(renderAWS(t), renderKubemark(t), renderVSphere(t), renderVSphereDay2(t),
		renderFor(t, configv1.PlatformStatus{Type: configv1.BareMetalPlatformType}, configv1.PlatformSpec{Type: configv1.BareMetalPlatformType}))
	for _, vanilla := range []bool{false, true} {
		crds, err := render.CRDs(config.Config{Namespace: namespace, OpenShift: !vanilla})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, crds...)
	}
	return objs
}

// TestOperatorRBACCoversOperand: the operator can apply and prune everything
// it renders, on every platform, with writes limited to exactly those names.
// Breaks if: a rendered cluster-scoped object's name is missing from the
// operator's resourceNames, or a stale name is left there.
func TestOperatorRBACCoversOperand(t *testing.T) {
	r := loadOperatorRBAC(t)
	objs := everyRender(t)
	for _, p := range checkCoversOperand(t, r, objs) {
		t.Error(p)
	}

	t.Run("named writes are exactly what the operator renders", func(t *testing.T) {
		rendered := map[string][]string{}
		for _, o := range objs {
			if o.GetNamespace() != "" {
				continue
			}
			gvk, err := apiutil.GVKForObject(o, testScheme())
			if err != nil {
				t.Fatal(err)
			}
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			if !slices.Contains(rendered[plural.Resource], o.GetName()) {
				rendered[plural.Resource] = append(rendered[plural.Resource], o.GetName())
			}
		}
		granted := map[string][]string{}
		for _, rule := range r.clusterRole.Rules {
			if !slices.ContainsFunc(rule.Verbs, func(v string) bool { return v == "patch" || v == "delete" || v == "create" || v == "update" }) {
				continue
			}
			for _, res := range rule.Resources {
				if _, ok := rendered[res]; !ok {
					continue
				}
				if len(rule.ResourceNames) == 0 {
					t.Errorf("the operator may write every %s, not only its own", res)
				}
				granted[res] = append(granted[res], rule.ResourceNames...)
			}
		}
		for res, want := range rendered {
			got := granted[res]
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(slices.Compact(got), want) {
				t.Errorf("the operator may write %s %v, it renders %v", res, got, want)
			}
		}
	})

	t.Run("every prunable kind can be listed", func(t *testing.T) {
		for _, gvk := range operator.PrunableKinds {
			plural, _ := meta.UnsafeGuessKindToResource(gvk)
			ns := namespace
			if clusterScoped[gvk.Kind] {
				ns = ""
			}
			for _, verb := range []string{"list", "watch"} {
				if a := (access{Verb: verb, Group: gvk.Group, Resource: plural.Resource, Namespace: ns}); !r.allows(a) {
					t.Errorf("cannot %s", a)
				}
			}
		}
	})

	t.Run("the rest of what the operator does", func(t *testing.T) {
		for _, a := range operatorAccess() {
			if !r.allows(a) {
				t.Errorf("the operator cannot %s", a)
			}
		}
		for _, a := range forbiddenAccess() {
			if r.allows(a) {
				t.Errorf("the operator can %s, which it does not need", a)
			}
		}
	})
}

// TestOperatorRBACLeastPrivilege: no wildcards, no cluster-admin, escalate and
// bind limited by name, no delete of CRDs, Secrets only in the namespace.
func TestOperatorRBACLeastPrivilege(t *testing.T) {
	r := loadOperatorRBAC(t)
	check := func(where string, rules []rbacv1.PolicyRule) {
		if len(rules) == 0 {
			t.Errorf("%s has no rules", where)
		}
		for i, rule := range rules {
			for field, values := range map[string][]string{"verbs": rule.Verbs, "resources": rule.Resources, "apiGroups": rule.APIGroups, "resourceNames": rule.ResourceNames} {
				for _, v := range values {
					if strings.Contains(v, "*") {
						t.Errorf("%s rule %d: %q in %s", where, i, v, field)
					}
				}
			}
			if len(rule.NonResourceURLs) > 0 {
				t.Errorf("%s rule %d: nonResourceURLs %v", where, i, rule.NonResourceURLs)
			}
			for _, v := range rule.Verbs {
				switch v {
				case "escalate", "bind", "impersonate", "deletecollection":
					t.Errorf("%s rule %d: verb %s is not needed", where, i, v)
				}
			}
			if slices.Contains(rule.APIGroups, rbacv1.GroupName) {
				t.Errorf("%s rule %d: the operator writes no RBAC (install/ ships the operand's)", where, i)
			}
			if slices.Contains(rule.Resources, "customresourcedefinitions") && slices.Contains(rule.Verbs, "delete") {
				t.Errorf("%s rule %d: deleting CRDs deletes every Machine; the operator never does", where, i)
			}
		}
	}
	check("ClusterRole", r.clusterRole.Rules)
	check("Role", r.role.Rules)
	if r.role.Namespace != namespace {
		t.Errorf("Role namespace = %q", r.role.Namespace)
	}
	if r.allows(access{Verb: "get", Resource: "secrets", Namespace: "other", Name: "x"}) {
		t.Error("the ClusterRole grants Secrets; they belong in the namespaced Role")
	}

	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operatorName, Namespace: namespace}}
	for _, b := range []struct {
		what     string
		ref      rbacv1.RoleRef
		subjects []rbacv1.Subject
		wantKind string
	}{
		{"ClusterRoleBinding", r.clusterRoleBinding.RoleRef, r.clusterRoleBinding.Subjects, "ClusterRole"},
		{"RoleBinding", r.roleBinding.RoleRef, r.roleBinding.Subjects, "Role"},
	} {
		if b.ref != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: b.wantKind, Name: operatorName}) {
			t.Errorf("%s roleRef = %+v, want the %s %s (never cluster-admin, admin or edit)", b.what, b.ref, b.wantKind, operatorName)
		}
		if !slices.Equal(b.subjects, wantSubjects) {
			t.Errorf("%s subjects = %+v, want %+v", b.what, b.subjects, wantSubjects)
		}
	}
	if r.roleBinding.Namespace != namespace {
		t.Errorf("RoleBinding namespace = %q", r.roleBinding.Namespace)
	}

	// Nothing else in the payload grants anything, except cluster
	// monitoring's read access (TestMonitoringRBAC), the operand's
	// OpenShift roles (TestOperandRBACOnOpenShift) and its node lease Role
	// (TestOperandRBACLeastPrivilege).
	for _, m := range loadPayload(t) {
		switch m.Object.GetKind() {
		case "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding":
			if m.Object.GetName() != operatorName && !isMonitoringRBAC(m) && m.File != operandRBACFile && m.File != leaseRBACFile && m.File != controllersRBACFile {
				t.Errorf("unexpected RBAC object %s", m)
			}
		}
	}
}

// operandRBACFile holds the operand's OpenShift-only RBAC.
const operandRBACFile = prefix + "09_operand-rbac.yaml"

// TestOperandRBACOnOpenShift: the payload's RBAC for the operand's
// ServiceAccount, with OpenShift's names: read-only ConfigMaps in
// openshift-config and openshift-config-managed, the aggregated
// external-remediation ClusterRole, and the cluster-reader aggregation. Each
// grants what its purpose needs and nothing more.
func TestOperandRBACOnOpenShift(t *testing.T) {
	ms := loadPayload(t)
	operandSA := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: operandRoleName, Namespace: namespace}}
	kinds := map[string]int{}
	for _, m := range ms {
		if m.File == operandRBACFile {
			kinds[m.Object.GetKind()]++
		}
	}
	if want := map[string]int{"Role": 2, "RoleBinding": 2, "ClusterRole": 2, "ClusterRoleBinding": 1}; !equality.Semantic.DeepEqual(kinds, want) {
		t.Errorf("%s holds %v, want %v", operandRBACFile, kinds, want)
	}

	for _, ns := range []string{"openshift-config", "openshift-config-managed"} {
		t.Run("ConfigMaps in "+ns, func(t *testing.T) {
			var role *rbacv1.Role
			var binding *rbacv1.RoleBinding
			for _, m := range ms {
				if m.Object.GetNamespace() != ns || m.Object.GetName() != operandRoleName {
					continue
				}
				switch o := decodeStrict(t, m).(type) {
				case *rbacv1.Role:
					role = o
				case *rbacv1.RoleBinding:
					binding = o
				}
			}
			if role == nil || binding == nil {
				t.Fatalf("no Role and RoleBinding %s in %s", operandRoleName, ns)
			}
			for _, a := range []access{
				{Verb: "get", Resource: "configmaps", Namespace: ns, Name: "cloud-provider-config"},
				{Verb: "list", Resource: "configmaps", Namespace: ns},
				{Verb: "watch", Resource: "configmaps", Namespace: ns},
			} {
				if !allows(role.Rules, a) {
					t.Errorf("the operand cannot %s", a)
				}
			}
			for _, a := range []access{
				{Verb: "get", Resource: "secrets", Namespace: ns, Name: "pull-secret"},
				{Verb: "update", Resource: "configmaps", Namespace: ns, Name: "cloud-provider-config"},
				{Verb: "delete", Resource: "configmaps", Namespace: ns, Name: "x"},
			} {
				if allows(role.Rules, a) {
					t.Errorf("the operand can %s, which it does not need", a)
				}
			}
			if binding.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: operandRoleName}) || !slices.Equal(binding.Subjects, operandSA) {
				t.Errorf("RoleBinding %s/%s: roleRef %+v subjects %+v", ns, binding.Name, binding.RoleRef, binding.Subjects)
			}
		})
	}

	t.Run("external remediation", func(t *testing.T) {
		const name = "machine-api-operator-ext-remediation"
		cr := typed[*rbacv1.ClusterRole](t, ms, "ClusterRole", name)
		if cr.AggregationRule == nil || len(cr.AggregationRule.ClusterRoleSelectors) != 1 ||
			!equality.Semantic.DeepEqual(cr.AggregationRule.ClusterRoleSelectors[0].MatchLabels, map[string]string{"rbac.ext-remediation/aggregate-to-ext-remediation": "true"}) {
			t.Errorf("ClusterRole %s aggregation %+v, want the rbac.ext-remediation/aggregate-to-ext-remediation label", name, cr.AggregationRule)
		}
		if len(cr.Rules) != 0 {
			t.Errorf("ClusterRole %s has rules of its own: %v (the controller manager fills them)", name, cr.Rules)
		}
		crb := typed[*rbacv1.ClusterRoleBinding](t, ms, "ClusterRoleBinding", name)
		if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}) || !slices.Equal(crb.Subjects, operandSA) {
			t.Errorf("ClusterRoleBinding %s: roleRef %+v subjects %+v", name, crb.RoleRef, crb.Subjects)
		}
	})

	t.Run("cluster-reader", func(t *testing.T) {
		cr := typed[*rbacv1.ClusterRole](t, ms, "ClusterRole", "machine-api-operator:cluster-reader")
		if cr.Labels["rbac.authorization.k8s.io/aggregate-to-cluster-reader"] != "true" {
			t.Errorf("labels %v, want the cluster-reader aggregation label", cr.Labels)
		}
		for _, r := range []string{"machines", "machinesets", "machinehealthchecks"} {
			for _, v := range []string{"get", "list", "watch"} {
				if a := (access{Verb: v, Group: "machine.openshift.io", Resource: r, Namespace: namespace, Name: "x"}); !allows(cr.Rules, a) {
					t.Errorf("cluster readers cannot %s", a)
				}
			}
			if a := (access{Verb: "update", Group: "machine.openshift.io", Resource: r, Namespace: namespace, Name: "x"}); allows(cr.Rules, a) {
				t.Errorf("cluster readers can %s", a)
			}
		}
	})
}

// clusterScoped are the cluster-scoped kinds the operator writes.
var clusterScoped = map[string]bool{
	"CustomResourceDefinition": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}
