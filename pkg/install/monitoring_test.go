package install_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/install"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// The monitoring part of the payload (install/0000_90_*) and of the vanilla
// Kubernetes component config/monitoring.
const (
	monitoringGroup     = "monitoring.coreos.com"
	clusterMonitoringNS = "openshift-monitoring"
	prometheusSA        = "prometheus-k8s"
	metricsReaderName   = "machine-api-metrics-reader"
	operandServiceName  = "machine-api-controllers"
	prometheusRuleName  = "machine-api-operator-prometheus-rules"
	// operatorMetricsPort is the operator's HTTPS metrics port (Service
	// machine-api-operator, port https).
	operatorMetricsPort = 8443
	saTokenFile         = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	serviceCAFile       = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"

	// The component's defaults: kube-prometheus' Prometheus.
	componentDir         = "config/monitoring"
	componentPrometheusN = "monitoring"
	alertTestsFile       = "hack/monitoring/alerts_test.yaml"
)

// The alerts and how long each condition must hold, as OpenShift has them.
var wantAlerts = map[string]string{
	"MachineWithoutValidNode":                    "60m",
	"MachineWithNoRunningPhase":                  "60m",
	"MachineNotYetDeleted":                       "360m",
	"MachineAPIOperatorMetricsCollectionFailing": "5m",
	"MachineHealthCheckUnterminatedShortCircuit": "30m",
}

// The subset of the Prometheus operator's monitoring.coreos.com/v1 API the
// payload uses, with its field names. Strict decoding into these types fails
// on any other field, so a misspelt one is caught here rather than pruned by
// the API server.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector             metav1.LabelSelector `json:"selector"`
		ServiceDiscoveryRole string               `json:"serviceDiscoveryRole"`
		Endpoints            []smEndpoint         `json:"endpoints"`
	} `json:"spec"`
}

type smEndpoint struct {
	Port            string `json:"port"`
	Scheme          string `json:"scheme"`
	Path            string `json:"path"`
	Interval        string `json:"interval"`
	BearerTokenFile string `json:"bearerTokenFile"`
	TLSConfig       struct {
		CAFile             string `json:"caFile,omitempty"`
		ServerName         string `json:"serverName,omitempty"`
		InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
	} `json:"tlsConfig"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []struct {
		Alert       string            `json:"alert"`
		Expr        string            `json:"expr"`
		For         string            `json:"for"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"rules"`
}

// decodeMonitoringStrict decodes a ServiceMonitor or PrometheusRule (JSON)
// into out (or a throwaway value), failing on unknown, duplicate or
// differently cased fields.
func decodeMonitoringStrict(t testing.TB, what, kind string, data []byte, out ...interface{}) {
	t.Helper()
	var target interface{}
	switch kind {
	case "ServiceMonitor":
		target = &serviceMonitor{}
	case "PrometheusRule":
		target = &prometheusRule{}
	default:
		t.Fatalf("%s: unexpected %s kind %s", what, monitoringGroup, kind)
	}
	if len(out) == 1 {
		target = out[0]
	}
	unmarshalStrict(t, what, data, target)
}

// unmarshalStrict decodes JSON data into target, failing on unknown, duplicate or differently cased fields.
func unmarshalStrict(t testing.TB, what string, data []byte, target any) {
	t.Helper()
	strict, err := sigsjson.UnmarshalStrict(data, target)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := errors.Join(strict...); err != nil {
		t.Fatalf("%s: strict decoding: %v", what, err)
	}
}

func isMonitoringRBAC(m install.Manifest) bool {
	switch m.Object.GetKind() {
	case "Role", "RoleBinding":
		return m.Object.GetName() == prometheusSA && m.Object.GetNamespace() == namespace
	case "ClusterRole", "ClusterRoleBinding":
		return m.Object.GetName() == metricsReaderName
	}
	return false
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tool returns the path of a binary `make tools` builds: in
// $KUBEBUILDER_ASSETS (set by the Makefile) or bin/.
func tool(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found in %s: run make tools", name, dir)
	}
	return p
}

func run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func toJSON(t testing.TB, obj map[string]interface{}) []byte {
	t.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func payloadServiceMonitor(t testing.TB, ms []install.Manifest, name string) serviceMonitor {
	t.Helper()
	m := find(t, ms, "ServiceMonitor", name)
	var sm serviceMonitor
	decodeMonitoringStrict(t, m.String(), "ServiceMonitor", toJSON(t, m.Object.Object), &sm)
	return sm
}

func payloadPrometheusRule(t testing.TB, ms []install.Manifest) (prometheusRule, install.Manifest) {
	t.Helper()
	m := find(t, ms, "PrometheusRule", prometheusRuleName)
	var pr prometheusRule
	decodeMonitoringStrict(t, m.String(), "PrometheusRule", toJSON(t, m.Object.Object), &pr)
	return pr, m
}

// ruleFile is the PrometheusRule's spec as a Prometheus rule file: the
// PrometheusRule spec is that file's format ({groups: [...]}).
func ruleFile(t testing.TB, m install.Manifest) []byte {
	t.Helper()
	spec, ok := m.Object.Object["spec"].(map[string]interface{})
	if !ok || len(spec) != 1 || spec["groups"] == nil {
		t.Fatalf("%s: spec must hold only groups, got %v", m, spec)
	}
	data, err := yaml.Marshal(map[string]interface{}{"groups": spec["groups"]})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// alertTests is the part of a promtool test file read here.
type alertTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			EvalTime  string                   `json:"eval_time"`
			Alertname string                   `json:"alertname"`
			ExpAlerts []map[string]interface{} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestAlertRules runs the alert unit tests (hack/monitoring/alerts_test.yaml)
// with bin/promtool on the payload's PrometheusRule, after checking that the
// rules are the expected alerts and that the tests cover each one: not
// firing before its duration, firing, and resolved afterwards.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	root := repoRoot(t)
	ms := loadPayload(t)
	pr, m := payloadPrometheusRule(t, ms)

	t.Run("the rules are the Machine API alerts", func(t *testing.T) {
		got := map[string]string{}
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					t.Errorf("group %s: a rule without alert (recording rules are not expected): %s", g.Name, r.Expr)
					continue
				}
				if _, dup := got[r.Alert]; dup {
					t.Errorf("alert %s is defined twice", r.Alert)
				}
				got[r.Alert] = r.For
				if sev := r.Labels["severity"]; sev != "warning" && sev != "critical" && sev != "info" {
					t.Errorf("alert %s: severity %q, want warning, critical or info", r.Alert, sev)
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("alert %s has no %s annotation", r.Alert, a)
					}
				}
			}
		}
		if !equality.Semantic.DeepEqual(got, wantAlerts) {
			t.Errorf("alerts (name: for) = %v, want %v", got, wantAlerts)
		}
	})

	t.Run("every alert is tested to fire after its duration and to resolve", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(root, alertTestsFile))
		if err != nil {
			t.Fatal(err)
		}
		var tests alertTests
		if err := yaml.Unmarshal(data, &tests); err != nil {
			t.Fatalf("%s: %v", alertTestsFile, err)
		}
		if !slices.Equal(tests.RuleFiles, []string{"rules.yaml"}) {
			t.Errorf("%s: rule_files = %v, want [rules.yaml] (written by this test)", alertTestsFile, tests.RuleFiles)
		}
		type coverage struct{ before, fired, after bool }
		covered := map[string]*coverage{}
		for _, tc := range tests.Tests {
			// Per test group and alert: the eval times with and without alerts.
			firstFired := map[string]time.Duration{}
			var quiet []struct {
				alert string
				at    time.Duration
			}
			for _, c := range tc.AlertRuleTest {
				at, err := time.ParseDuration(c.EvalTime)
				if err != nil {
					t.Fatalf("%s: test %q: eval_time %q: %v", alertTestsFile, tc.Name, c.EvalTime, err)
				}
				if _, ok := wantAlerts[c.Alertname]; !ok {
					t.Errorf("%s: test %q checks an unknown alert %q", alertTestsFile, tc.Name, c.Alertname)
				}
				if covered[c.Alertname] == nil {
					covered[c.Alertname] = &coverage{}
				}
				if len(c.ExpAlerts) > 0 {
					covered[c.Alertname].fired = true
					if f, ok := firstFired[c.Alertname]; !ok || at < f {
						firstFired[c.Alertname] = at
					}
				} else {
					quiet = append(quiet, struct {
						alert string
						at    time.Duration
					}{c.Alertname, at})
				}
			}
			for _, q := range quiet {
				f, ok := firstFired[q.alert]
				if !ok {
					continue
				}
				if q.at < f {
					covered[q.alert].before = true
				} else {
					covered[q.alert].after = true
				}
			}
		}
		for alert := range wantAlerts {
			c := covered[alert]
			switch {
			case c == nil || !c.fired:
				t.Errorf("%s: no test in which %s fires", alertTestsFile, alert)
			case !c.before:
				t.Errorf("%s: no test that %s does not fire before its duration", alertTestsFile, alert)
			case !c.after:
				t.Errorf("%s: no test that %s resolves", alertTestsFile, alert)
			}
		}
	})

	t.Run("promtool", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleFile(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
		tests, err := os.ReadFile(filepath.Join(root, alertTestsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log(run(t, dir, promtool, "check", "rules", "rules.yaml"))
		t.Log(run(t, dir, promtool, "test", "rules", "alerts_test.yaml"))
	})
}

// TestServiceMonitors: every Machine API metrics port is scraped every 30s
// over HTTPS with Prometheus' ServiceAccount token, verifying the service-ca
// serving certificate of the Service, the targets found through EndpointSlices.
func TestServiceMonitors(t *testing.T) {
	ms := loadPayload(t)
	want := map[string]struct {
		selector map[string]string
		ports    []string
	}{
		operatorName:       {map[string]string{"k8s-app": operatorName}, []string{"https"}},
		operandServiceName: {map[string]string{"k8s-app": "controller"}, []string{"machine-mtrc", "machineset-mtrc", "mhc-mtrc", "nodelink-mtrc"}},
	}
	var names []string
	for _, m := range ms {
		if m.Object.GetKind() == "ServiceMonitor" {
			names = append(names, m.Object.GetName())
		}
	}
	if len(names) != len(want) {
		t.Errorf("ServiceMonitors %v, want one per Service of %v", names, want)
	}
	for name, w := range want {
		sm := payloadServiceMonitor(t, ms, name)
		if sm.Namespace != namespace || !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
			t.Errorf("ServiceMonitor %s: namespace %s, namespaceSelector %v; want both %s", name, sm.Namespace, sm.Spec.NamespaceSelector.MatchNames, namespace)
		}
		if !equality.Semantic.DeepEqual(sm.Spec.Selector, metav1.LabelSelector{MatchLabels: w.selector}) {
			t.Errorf("ServiceMonitor %s: selector %v, want matchLabels %v", name, sm.Spec.Selector, w.selector)
		}
		// Breaks if: a ServiceMonitor drops serviceDiscoveryRole (Prometheus
		// then watches the deprecated Endpoints API, unlike OpenShift's).
		if sm.Spec.ServiceDiscoveryRole != "EndpointSlice" {
			t.Errorf("ServiceMonitor %s: serviceDiscoveryRole %q, want EndpointSlice (as OpenShift's)", name, sm.Spec.ServiceDiscoveryRole)
		}
		var ports []string
		for _, ep := range sm.Spec.Endpoints {
			ports = append(ports, ep.Port)
			wantEP := smEndpoint{Port: ep.Port, Scheme: "https", Path: "/metrics", Interval: "30s", BearerTokenFile: saTokenFile}
			wantEP.TLSConfig.CAFile = serviceCAFile
			wantEP.TLSConfig.ServerName = name + "." + namespace + ".svc"
			if ep != wantEP {
				t.Errorf("ServiceMonitor %s endpoint %s =\n  %+v\nwant\n  %+v", name, ep.Port, ep, wantEP)
			}
		}
		if !slices.Equal(ports, w.ports) {
			t.Errorf("ServiceMonitor %s scrapes ports %v, want %v", name, ports, w.ports)
		}
	}

	// The Services the ServiceMonitors select: the operator's from install/,
	// the operand's as the operator renders it.
	t.Run("the selected Services have the scraped ports", func(t *testing.T) {
		services := map[string]*corev1.Service{operatorName: typed[*corev1.Service](t, ms, "Service", operatorName)}
		for _, o := range renderKubemark(t) {
			if s, ok := o.(*corev1.Service); ok && s.Name == operandServiceName {
				services[operandServiceName] = s
			}
		}
		for name, w := range want {
			svc := services[name]
			if svc == nil {
				t.Errorf("Service %s is not rendered", name)
				continue
			}
			if !labels.SelectorFromSet(w.selector).Matches(labels.Set(svc.Labels)) {
				t.Errorf("Service %s has labels %v: ServiceMonitor %s (selector %v) does not select it", name, svc.Labels, name, w.selector)
			}
			for _, p := range w.ports {
				if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == p }) {
					t.Errorf("Service %s has no port %s", name, p)
				}
			}
		}
	})
}

// TestMonitoringRBAC: cluster monitoring's Prometheus may read the targets in
// the namespace and GET /metrics, and nothing more.
func TestMonitoringRBAC(t *testing.T) {
	ms := loadPayload(t)
	checkMonitoringRBAC(t, clusterMonitoringNS,
		typed[*rbacv1.Role](t, ms, "Role", prometheusSA),
		typed[*rbacv1.RoleBinding](t, ms, "RoleBinding", prometheusSA),
		typed[*rbacv1.ClusterRole](t, ms, "ClusterRole", metricsReaderName),
		typed[*rbacv1.ClusterRoleBinding](t, ms, "ClusterRoleBinding", metricsReaderName))
}

func checkMonitoringRBAC(t *testing.T, promNS string, role *rbacv1.Role, rb *rbacv1.RoleBinding, cr *rbacv1.ClusterRole, crb *rbacv1.ClusterRoleBinding) {
	t.Helper()
	discovery := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	}
	if role.Namespace != namespace || !equality.Semantic.DeepEqual(role.Rules, discovery) {
		t.Errorf("Role %s/%s rules =\n  %+v\nwant read-only discovery\n  %+v", role.Namespace, role.Name, role.Rules, discovery)
	}
	metricsOnly := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if !equality.Semantic.DeepEqual(cr.Rules, metricsOnly) {
		t.Errorf("ClusterRole %s rules = %+v, want %+v", cr.Name, cr.Rules, metricsOnly)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: prometheusSA, Namespace: promNS}}
	if rb.Namespace != namespace || rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}) || !slices.Equal(rb.Subjects, subjects) {
		t.Errorf("RoleBinding %s/%s: roleRef %+v, subjects %+v; want Role %s, subjects %+v", rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects, role.Name, subjects)
	}
	if crb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}) || !slices.Equal(crb.Subjects, subjects) {
		t.Errorf("ClusterRoleBinding %s: roleRef %+v, subjects %+v; want ClusterRole %s, subjects %+v", crb.Name, crb.RoleRef, crb.Subjects, cr.Name, subjects)
	}
}

// A network connection of a pod of the namespace, for evaluating the
// NetworkPolicies the way a network plugin does.
type connection struct {
	pod     map[string]string // labels of the pod in the namespace
	ingress bool              // to the pod (else from it)
	proto   corev1.Protocol
	port    int32
	// The other end: a pod in peerNS, or, if peerNS is "", an address that is
	// no pod (the API server, a cloud API, a node elsewhere).
	peerNS string
}

func (c connection) String() string {
	dir, peer := "from", c.peerNS
	if !c.ingress {
		dir = "to"
	}
	if peer == "" {
		peer = "an address outside the cluster's pods"
	} else {
		peer = "a pod in namespace " + peer
	}
	if c.ingress {
		return fmt.Sprintf("pod %v accepts %s/%d %s %s", c.pod, c.proto, c.port, dir, peer)
	}
	return fmt.Sprintf("pod %v connects %s/%d %s %s", c.pod, c.proto, c.port, dir, peer)
}

// allowedBy reports whether the policies (all in the namespace) allow c.
func allowedBy(t testing.TB, policies []*networkingv1.NetworkPolicy, c connection) bool {
	t.Helper()
	isolated := false
	for _, p := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			t.Fatalf("NetworkPolicy %s: %v", p.Name, err)
		}
		if !sel.Matches(labels.Set(c.pod)) {
			continue
		}
		want := networkingv1.PolicyTypeEgress
		if c.ingress {
			want = networkingv1.PolicyTypeIngress
		}
		if !slices.Contains(p.Spec.PolicyTypes, want) {
			continue
		}
		isolated = true
		type rule struct {
			ports []networkingv1.NetworkPolicyPort
			peers []networkingv1.NetworkPolicyPeer
		}
		var rules []rule
		if c.ingress {
			for _, r := range p.Spec.Ingress {
				rules = append(rules, rule{r.Ports, r.From})
			}
		} else {
			for _, r := range p.Spec.Egress {
				rules = append(rules, rule{r.Ports, r.To})
			}
		}
		for _, r := range rules {
			if portMatches(t, p.Name, r.ports, c) && peerMatches(t, p.Name, r.peers, c) {
				return true
			}
		}
	}
	return !isolated
}

func portMatches(t testing.TB, policy string, ports []networkingv1.NetworkPolicyPort, c connection) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if proto != c.proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.StrVal != "" {
			t.Fatalf("NetworkPolicy %s: named port %s (numbers are used: named ports match only pods' container ports)", policy, p.Port.StrVal)
		}
		end := p.Port.IntVal
		if p.EndPort != nil {
			end = *p.EndPort
		}
		if c.port >= p.Port.IntVal && c.port <= end {
			return true
		}
	}
	return false
}

func peerMatches(t testing.TB, policy string, peers []networkingv1.NetworkPolicyPeer, c connection) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			t.Fatalf("NetworkPolicy %s: ipBlock is not expected", policy)
		}
		if c.peerNS == "" {
			continue // selectors match only pods
		}
		ns := namespace
		if p.NamespaceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			if !sel.Matches(labels.Set{"kubernetes.io/metadata.name": c.peerNS}) {
				continue
			}
			ns = c.peerNS
		}
		if ns != c.peerNS {
			continue
		}
		if p.PodSelector != nil && (len(p.PodSelector.MatchLabels) > 0 || len(p.PodSelector.MatchExpressions) > 0) {
			t.Fatalf("NetworkPolicy %s: peer pod selectors are not expected", policy)
		}
		return true
	}
	return false
}

func payloadNetworkPolicies(t testing.TB, ms []install.Manifest) []*networkingv1.NetworkPolicy {
	t.Helper()
	var out []*networkingv1.NetworkPolicy
	for _, m := range ms {
		if m.Object.GetKind() == "NetworkPolicy" {
			np := decodeStrict(t, m).(*networkingv1.NetworkPolicy)
			if np.Namespace != namespace {
				t.Errorf("%s: namespace %q", m, np.Namespace)
			}
			out = append(out, np)
		}
	}
	return out
}

// checkNetworkPolicies checks what the policies allow for the operator's
// pod (from install/), the operand's pod (as rendered) and any other pod of
// the namespace, with Prometheus in promNS.
func checkNetworkPolicies(t *testing.T, policies []*networkingv1.NetworkPolicy, promNS string) {
	t.Helper()
	ms := loadPayload(t)
	operatorPod := typed[*appsv1.Deployment](t, ms, "Deployment", operatorName).Spec.Template
	var operandPod *corev1.PodTemplateSpec
	for _, o := range renderAWS(t) {
		if d, ok := o.(*appsv1.Deployment); ok {
			operandPod = &d.Spec.Template
		}
	}
	if operandPod == nil {
		t.Fatal("the AWS render has no Deployment")
	}
	otherPod := map[string]string{"app": "something-else"}
	expect := func(c connection, want bool) {
		t.Helper()
		if got := allowedBy(t, policies, c); got != want {
			verb := "must not"
			if want {
				verb = "must"
			}
			t.Errorf("%s: %s be allowed", c, verb)
		}
	}
	const tcp, udp = corev1.ProtocolTCP, corev1.ProtocolUDP
	peers := []string{"", promNS, "default", namespace}

	// Ingress: the operand's webhook ports from anywhere (the API server),
	// metrics ports from Prometheus' namespace, nothing else (health probes
	// come from the pod's node, which policies never block).
	for _, c := range operandPod.Spec.Containers {
		for _, p := range c.Ports {
			for _, peer := range peers {
				conn := connection{pod: operandPod.Labels, ingress: true, proto: p.Protocol, port: p.ContainerPort, peerNS: peer}
				switch {
				case p.Name == "webhook-server" || p.Name == "machine-webhook":
					expect(conn, true)
				case strings.HasSuffix(p.Name, "-mtrc"):
					expect(conn, peer == promNS)
				default:
					expect(conn, false)
				}
			}
		}
	}
	// The operator's metrics port from Prometheus' namespace; nothing else
	// (its other container ports, the old metrics port 8085, an operand's).
	operatorPorts := []int32{operatorMetricsPort, 8085, 8081}
	for _, c := range operatorPod.Spec.Containers {
		for _, p := range c.Ports {
			operatorPorts = append(operatorPorts, p.ContainerPort)
			if p.Name == "https" && p.ContainerPort != operatorMetricsPort {
				t.Errorf("the operator serves metrics (port https) on %d, the NetworkPolicies allow %d", p.ContainerPort, operatorMetricsPort)
			}
		}
	}
	for _, port := range operatorPorts {
		for _, peer := range peers {
			expect(connection{pod: operatorPod.Labels, ingress: true, proto: tcp, port: port, peerNS: peer}, port == operatorMetricsPort && peer == promNS)
		}
	}
	// Egress: the operator reaches the API server and DNS only; the operand
	// anything (cloud APIs); both only from their own pods.
	for _, e := range []struct {
		proto    corev1.Protocol
		port     int32
		peer     string
		operator bool
	}{
		{tcp, 443, "", true}, {tcp, 6443, "", true},
		{udp, 53, "", true}, {tcp, 53, "", true}, {udp, 5353, "kube-system", true}, {tcp, 5353, "kube-system", true},
		{tcp, 80, "", false}, {tcp, 8774, "", false}, {tcp, 3128, "", false}, {tcp, 9091, promNS, false}, {udp, 443, "", false},
	} {
		expect(connection{pod: operatorPod.Labels, proto: e.proto, port: e.port, peerNS: e.peer}, e.operator)
		expect(connection{pod: operandPod.Labels, proto: e.proto, port: e.port, peerNS: e.peer}, true)
		expect(connection{pod: otherPod, proto: e.proto, port: e.port, peerNS: e.peer}, false)
	}
	for _, port := range []int32{443, 8443, 8081, 53} {
		for _, peer := range peers {
			expect(connection{pod: otherPod, ingress: true, proto: tcp, port: port, peerNS: peer}, false)
		}
	}
}

// TestNetworkPolicies: the payload's policies deny everything to and from
// the namespace's pods except what the operator and the operand need.
func TestNetworkPolicies(t *testing.T) {
	policies := payloadNetworkPolicies(t, loadPayload(t))
	deny := 0
	for _, p := range policies {
		if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 && len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 &&
			slices.Equal(p.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
			deny++
		}
	}
	if deny != 1 {
		t.Errorf("want one default-deny policy (all pods, Ingress and Egress, no rules), found %d", deny)
	}
	checkNetworkPolicies(t, policies, clusterMonitoringNS)
}

// kustomizeBuild runs bin/kustomize build on a directory of the repository.
func kustomizeBuild(t testing.TB, dir string) []install.Manifest {
	t.Helper()
	root := repoRoot(t)
	out := run(t, root, tool(t, "kustomize"), "build", dir)
	ms, err := install.Parse("kustomize build "+dir, []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestKustomizations: the root kustomization (vanilla Kubernetes) carries the
// payload's NetworkPolicies but nothing of the Prometheus operator; the
// config/monitoring component carries the payload's monitoring objects,
// changed only where vanilla Kubernetes differs.
func TestKustomizations(t *testing.T) {
	ms := loadPayload(t)
	payload := map[string]install.Manifest{}
	for _, m := range ms {
		payload[m.Object.GetKind()+"/"+m.Object.GetName()] = m
	}

	t.Run("root", func(t *testing.T) {
		built := kustomizeBuild(t, ".")
		policies := 0
		for _, m := range built {
			kind := m.Object.GetKind()
			if m.Object.GroupVersionKind().Group == monitoringGroup || isMonitoringRBAC(m) {
				t.Errorf("%s: not for vanilla Kubernetes without config/monitoring", m)
			}
			if kind == "Deployment" && m.Object.GetName() == operatorName {
				// OpenShift's control-plane scheduling is not for vanilla
				// Kubernetes, whose control planes are labelled otherwise.
				spec, _, _ := unstructured.NestedMap(m.Object.Object, "spec", "template", "spec")
				for _, field := range []string{"nodeSelector", "priorityClassName"} {
					if _, ok := spec[field]; ok {
						t.Errorf("%s: %s is OpenShift's, not for vanilla Kubernetes", m, field)
					}
				}
			}
			if kind != "NetworkPolicy" {
				continue
			}
			policies++
			p, ok := payload[kind+"/"+m.Object.GetName()]
			if !ok || !equality.Semantic.DeepEqual(p.Object.Object, m.Object.Object) {
				t.Errorf("%s differs from the payload's", m)
			}
		}
		if want := len(payloadNetworkPolicies(t, ms)); policies != want {
			t.Errorf("the root kustomization has %d NetworkPolicies, want the payload's %d", policies, want)
		}
	})

	t.Run("config/monitoring", func(t *testing.T) {
		built := kustomizeBuild(t, componentDir)
		var role *rbacv1.Role
		var rb *rbacv1.RoleBinding
		var cr *rbacv1.ClusterRole
		var crb *rbacv1.ClusterRoleBinding
		var componentPolicies []*networkingv1.NetworkPolicy
		kinds := map[string]int{}
		for _, m := range built {
			kind, name := m.Object.GetKind(), m.Object.GetName()
			kinds[kind]++
			if len(m.Object.GetAnnotations()) != 0 {
				t.Errorf("%s: no release annotations outside install/", m)
			}
			switch kind {
			case "ServiceMonitor":
				var sm serviceMonitor
				decodeMonitoringStrict(t, m.String(), kind, toJSON(t, m.Object.Object), &sm)
				want := payloadServiceMonitor(t, ms, name)
				// The same but for the TLS verification: no service-ca.
				for i := range want.Spec.Endpoints {
					want.Spec.Endpoints[i].TLSConfig.CAFile = ""
					want.Spec.Endpoints[i].TLSConfig.ServerName = ""
					want.Spec.Endpoints[i].TLSConfig.InsecureSkipVerify = true
				}
				want.Annotations = nil
				if !equality.Semantic.DeepEqual(sm, want) {
					t.Errorf("%s =\n  %+v\nwant the payload's with insecureSkipVerify\n  %+v", m, sm, want)
				}
			case "PrometheusRule":
				want, _ := payloadPrometheusRule(t, ms)
				var pr prometheusRule
				decodeMonitoringStrict(t, m.String(), kind, toJSON(t, m.Object.Object), &pr)
				want.Annotations = nil
				if !equality.Semantic.DeepEqual(pr, want) {
					t.Errorf("%s differs from the payload's PrometheusRule (change both)", m)
				}
			case "Role":
				role = convert[rbacv1.Role](t, m)
			case "RoleBinding":
				rb = convert[rbacv1.RoleBinding](t, m)
			case "ClusterRole":
				cr = convert[rbacv1.ClusterRole](t, m)
			case "ClusterRoleBinding":
				crb = convert[rbacv1.ClusterRoleBinding](t, m)
			case "NetworkPolicy":
				componentPolicies = append(componentPolicies, convert[networkingv1.NetworkPolicy](t, m))
			default:
				t.Errorf("%s: unexpected", m)
			}
		}
		if want := map[string]int{"ServiceMonitor": 2, "PrometheusRule": 1, "Role": 1, "RoleBinding": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "NetworkPolicy": 2}; !equality.Semantic.DeepEqual(kinds, want) {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
		checkMonitoringRBAC(t, componentPrometheusN, role, rb, cr, crb)
		// The component's policies are added to the root kustomization's.
		checkNetworkPolicies(t, append(payloadNetworkPolicies(t, ms), componentPolicies...), componentPrometheusN)
	})
}

func convert[T any](t testing.TB, m install.Manifest) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m.Object.Object, out, true); err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	return out
}

// monitoringAccess checks, against a real API server, that cluster
// monitoring's Prometheus may discover the targets and GET /metrics.
func monitoringAccess(t *testing.T, sar func(user string, groups []string, a access, url string) bool) {
	user := "system:serviceaccount:" + clusterMonitoringNS + ":" + prometheusSA
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + clusterMonitoringNS, "system:authenticated"}
	for _, a := range []access{
		{Verb: "list", Resource: "endpoints", Namespace: namespace},
		{Verb: "watch", Resource: "services", Namespace: namespace},
		{Verb: "get", Resource: "pods", Namespace: namespace, Name: "x"},
		{Verb: "list", Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: namespace},
	} {
		if !sar(user, groups, a, "") {
			t.Errorf("Prometheus cannot %s", a)
		}
	}
	for _, a := range []access{
		{Verb: "list", Resource: "secrets", Namespace: namespace},
		{Verb: "list", Resource: "endpoints", Namespace: "default"},
		{Verb: "delete", Resource: "pods", Namespace: namespace, Name: "x"},
	} {
		if sar(user, groups, a, "") {
			t.Errorf("Prometheus can %s", a)
		}
	}
	if !sar(user, groups, access{Verb: "get"}, "/metrics") {
		t.Error("Prometheus cannot GET /metrics")
	}
	if sar(user, groups, access{Verb: "get"}, "/debug/pprof/") {
		t.Error("Prometheus can GET /debug/pprof/")
	}
}
