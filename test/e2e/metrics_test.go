//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// metricsTarget is one binary's metrics endpoint: pod IP and container port.
type metricsTarget struct {
	binary string
	addr   string
}

// series is one scraped sample: metric name, labels, value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

func (s series) String() string {
	var ls []string
	for k, v := range s.labels {
		ls = append(ls, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(ls)
	return fmt.Sprintf("%s{%s} %v", s.name, strings.Join(ls, ","), s.value)
}

// localPod returns the Ready pod with the label k8s-app=app in the operand
// namespace, or skips the test when its containers are not run by the local
// pod runner: only that runner makes pod IPs reachable from the test machine.
func localPod(ctx context.Context, t *testing.T, app string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(ctx, t, "one Ready pod with k8s-app="+app, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := cluster.List(ctx, pods, client.InNamespace(operandNamespace()), client.MatchingLabels{"k8s-app": app}); err != nil {
			return false, err
		}
		pod = nil
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && podReady(p) && p.Status.PodIP != "" {
				pod = p
			}
		}
		return pod != nil, nil
	})
	for _, cs := range pod.Status.ContainerStatuses {
		if !strings.HasPrefix(cs.ContainerID, "local://") {
			t.Skipf("pod %s container %s has container ID %q, not local://<pid>: the metrics endpoints are scraped at the pods' IPs, "+
				"which only the local pod runner (make test-e2e-local) makes reachable from the test machine", pod.Name, cs.Name, cs.ContainerID)
		}
	}
	return pod
}

// containerPort is the port named name of the pod's containers.
func containerPort(t *testing.T, pod *corev1.Pod, name string) int32 {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return p.ContainerPort
			}
		}
	}
	t.Fatalf("pod %s declares no container port %s", pod.Name, name)
	return 0
}

// scrapeIdentity creates a namespace with the ServiceAccounts scraper (bound
// to a ClusterRole with GET on /metrics) and no-rbac, and returns a token of
// each. It waits until the API server authorizes the scraper, so that the
// first scrape does not get (and the endpoints do not cache) a denial.
func scrapeIdentity(ctx context.Context, t *testing.T) (allowed, denied string) {
	t.Helper()
	name := "e2e-metrics-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: "scraper"}}}
	for _, o := range []client.Object{ns, cr, crb} {
		if err := cluster.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.Delete(context.Background(), o) })
	}
	tokenOf := func(sa string) string {
		acct := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: sa}}
		if err := cluster.Create(ctx, acct); err != nil {
			t.Fatal(err)
		}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
		if err := cluster.SubResource("token").Create(ctx, acct, tr); err != nil {
			t.Fatalf("TokenRequest for %s/%s: %v", name, sa, err)
		}
		return tr.Status.Token
	}
	allowed, denied = tokenOf("scraper"), tokenOf("no-rbac")
	user := "system:serviceaccount:" + name + ":scraper"
	waitFor(ctx, t, user+" allowed GET /metrics", func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + name, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := cluster.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	return allowed, denied
}

// scrape GETs https://addr/metrics with the bearer token ("" = none). The
// certificate is not verified: without service-ca it is self-signed.
func scrape(ctx context.Context, addr, token string) (int, []series, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("parsing the metrics of %s: %w", addr, err)
	}
	var out []series
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := series{name: name, labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value = float64(m.GetHistogram().GetSampleCount())
			default:
				s.value = m.GetUntyped().GetValue()
			}
			out = append(out, s)
		}
	}
	return resp.StatusCode, out, nil
}

// find returns the series named name whose labels include want.
func find(all []series, name string, want map[string]string) []series {
	var out []series
	for _, s := range all {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// expectation is one series a binary must serve: exactly these label names,
// the given label values, and a value check.
type expectation struct {
	name       string
	labelNames []string
	labels     map[string]string
	value      check
}

// check is a condition on a sample's value.
type check struct {
	ok   func(float64) bool
	desc string
}

func eq(v float64) check {
	return check{func(x float64) bool { return x == v }, strconv.FormatFloat(v, 'f', -1, 64)}
}

func atLeast(v float64) check {
	return check{func(x float64) bool { return x >= v }, ">= " + strconv.FormatFloat(v, 'f', -1, 64)}
}

var anyValue = check{func(float64) bool { return true }, "any"}

func expect(name string, labelNames []string, labels map[string]string, c check) expectation {
	return expectation{name: name, labelNames: labelNames, labels: labels, value: c}
}

// unmet returns why the scraped series do not satisfy e ("" if they do).
func (e expectation) unmet(all []series) string {
	found := find(all, e.name, e.labels)
	if len(found) == 0 {
		return fmt.Sprintf("no series %s with labels %v", e.name, e.labels)
	}
	for _, s := range found {
		var names []string
		for k := range s.labels {
			if k != "le" { // histogram buckets
				names = append(names, k)
			}
		}
		sort.Strings(names)
		want := append([]string{}, e.labelNames...)
		sort.Strings(want)
		if strings.Join(names, ",") != strings.Join(want, ",") {
			return fmt.Sprintf("%s has labels %v, want exactly %v", s, names, want)
		}
		if !e.value.ok(s.value) {
			return fmt.Sprintf("%s: value %v, want %s", s, s.value, e.value.desc)
		}
	}
	return ""
}

// TestMetrics (local cluster): every binary serves its metrics over HTTPS at
// its pod IP and declared port, refuses a request without credentials (401)
// and a token without GET /metrics (403), and, to a token allowed GET
// /metrics, serves OpenShift's series with OpenShift's labels for a Running
// kubemark Machine, its MachineSet and a MachineHealthCheck over it, and the
// create failure of a Machine the provider cannot create; each series is
// served by exactly one binary.
func TestMetrics(t *testing.T) {
	ctx := kubemarkTest(t, 5*time.Minute)
	operatorPod := localPod(ctx, t, "machine-api-operator")
	operand := operandPod(ctx, t)
	localPod(ctx, t, "controller")
	targets := []metricsTarget{{"machine-api-operator", net.JoinHostPort(operatorPod.Status.PodIP, strconv.Itoa(int(containerPort(t, operatorPod, "https"))))}}
	for _, c := range []struct{ binary, port string }{
		{"machine-controller", "machine-mtrc"}, {"machineset-controller", "machineset-mtrc"},
		{"machine-healthcheck", "mhc-mtrc"}, {"nodelink-controller", "nodelink-mtrc"},
	} {
		targets = append(targets, metricsTarget{c.binary, net.JoinHostPort(operand.Status.PodIP, strconv.Itoa(int(containerPort(t, operand, c.port))))})
	}
	allowed, denied := scrapeIdentity(ctx, t)

	// Refusals first: no credentials, then a token without the permission.
	for _, tg := range targets {
		if code, _, err := scrape(ctx, tg.addr, ""); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s (%s) without credentials: status %d (%v), want 401", tg.binary, tg.addr, code, err)
		}
		if code, _, err := scrape(ctx, tg.addr, denied); err != nil || code != http.StatusForbidden {
			t.Errorf("%s (%s) with a token not allowed GET /metrics: status %d (%v), want 403", tg.binary, tg.addr, code, err)
		}
	}

	// A MachineSet of one Running Machine, an MHC over it, and a Machine
	// whose name cannot name a kubemark node (longer than 63 characters):
	// the provider's Create fails with InvalidConfiguration.
	name := "e2e-metrics-" + rand.String(5)
	ms := newKubemarkMachineSet(name, 1)
	createMachineSet(ctx, t, ms)
	machines := waitMachineSetReady(ctx, t, ms, 1)
	m := machines[0]
	node, _ := waitRunning(ctx, t, m)
	mhc := newMachineHealthCheck(name, 10*time.Minute, intstr.FromString("100%"))
	createMachineHealthCheck(ctx, t, mhc)
	bad := newKubemarkMachine(name+"-"+strings.Repeat("x", 60), "metrics")
	badCreated := true
	if err := cluster.Create(ctx, bad); err != nil {
		// Should admission ever refuse such a name, the counter is still
		// covered by the machine controller's tests.
		t.Logf("a Machine with a 78-character name was refused (%v); not checking mapi_instance_create_failed here", err)
		badCreated = false
	} else {
		deleteMachineOnCleanup(t, bad)
	}

	ns := operandNamespace()
	nameNS := func(n string) map[string]string { return map[string]string{"name": n, "namespace": ns} }
	msLabels := []string{"name", "namespace"}
	want := map[string][]expectation{
		"machine-api-operator": {
			expect("mapi_mao_collector_up", []string{"kind"}, map[string]string{"kind": "mapi_machine_items"}, eq(1)),
			expect("mapi_mao_collector_up", []string{"kind"}, map[string]string{"kind": "mapi_machineset_items"}, eq(1)),
			expect("mapi_machine_items", nil, nil, atLeast(1)),
			expect("mapi_machineset_items", nil, nil, atLeast(1)),
			expect("mapi_machine_created_timestamp_seconds", []string{"name", "namespace", "spec_provider_id", "node", "api_version", "phase"},
				map[string]string{"name": m.Name, "namespace": ns, "spec_provider_id": ptr.Deref(m.Spec.ProviderID, ""), "node": node,
					"api_version": "machine.openshift.io/v1beta1", "phase": machinev1beta1.PhaseRunning},
				eq(float64(m.CreationTimestamp.Unix()))),
			expect("mapi_machineset_created_timestamp_seconds", []string{"name", "namespace", "api_version"},
				map[string]string{"name": name, "namespace": ns, "api_version": "machine.openshift.io/v1beta1"},
				eq(float64(ms.CreationTimestamp.Unix()))),
			expect("mapi_machine_set_status_replicas", msLabels, nameNS(name), eq(1)),
			expect("mapi_machine_set_status_replicas_ready", msLabels, nameNS(name), eq(1)),
			expect("mapi_machine_set_status_replicas_available", msLabels, nameNS(name), eq(1)),
			expect("mapi_machine_set_spec_replicas", msLabels, nameNS(name), eq(1)),
		},
		"machine-controller": {
			expect("mapi_machine_phase_transition_seconds", []string{"phase"}, map[string]string{"phase": machinev1beta1.PhaseRunning}, atLeast(1)),
			expect("controller_runtime_reconcile_total", []string{"controller", "result"}, map[string]string{"controller": "machine", "result": "success"}, atLeast(1)),
		},
		"machineset-controller": {
			expect("controller_runtime_reconcile_total", []string{"controller", "result"}, map[string]string{"controller": "machineset", "result": "success"}, atLeast(1)),
			expect("machine_api_machineset_machine_creates_total", []string{"result"}, map[string]string{"result": "success"}, atLeast(1)),
		},
		"machine-healthcheck": {
			expect("mapi_machinehealthcheck_nodes_covered", msLabels, nameNS(name), eq(1)),
			expect("mapi_machinehealthcheck_short_circuit", msLabels, nameNS(name), eq(0)),
		},
		"nodelink-controller": {
			expect("controller_runtime_reconcile_total", []string{"controller", "result"}, map[string]string{"result": "success"}, atLeast(1)),
		},
	}
	if badCreated {
		want["machine-controller"] = append(want["machine-controller"],
			expect("mapi_instance_create_failed", []string{"name", "namespace", "reason"},
				map[string]string{"name": bad.Name, "namespace": ns, "reason": string(machinev1beta1.InvalidConfigurationMachineError)}, atLeast(1)))
	}

	scraped := map[string][]series{}
	waitFor(ctx, t, "every binary serving the expected series", func(ctx context.Context) (bool, error) {
		var problems []string
		for _, tg := range targets {
			code, all, err := scrape(ctx, tg.addr, allowed)
			if err != nil || code != http.StatusOK {
				problems = append(problems, fmt.Sprintf("%s: status %d (%v)", tg.binary, code, err))
				continue
			}
			scraped[tg.binary] = all
			for _, e := range want[tg.binary] {
				if p := e.unmet(all); p != "" {
					problems = append(problems, tg.binary+": "+p)
				}
			}
		}
		if len(problems) > 0 {
			t.Logf("not yet: %s", strings.Join(problems, "; "))
			return false, nil
		}
		return true, nil
	})

	// OpenShift's labels on series that exist only after an event
	// (remediations; update and delete failures): checked when present.
	labelNames := map[string][]string{
		"mapi_machinehealthcheck_remediation_success_total": {"name", "namespace"},
		"mapi_instance_update_failed":                       {"name", "namespace", "reason"},
		"mapi_instance_delete_failed":                       {"name", "namespace", "reason"},
	}
	for binary, all := range scraped {
		for metric, names := range labelNames {
			for _, s := range find(all, metric, nil) {
				if p := expect(metric, names, s.labels, anyValue).unmet([]series{s}); p != "" {
					t.Errorf("%s: %s", binary, p)
				}
			}
		}
	}

	// Each Machine API series (name and labels) is served by one binary
	// only: two scrape targets serving the same series would double every
	// sum and alert. A per-binary gauge such as
	// machine_api_operand_waiting_for_crd tells its series apart by label.
	servedBy := map[string][]string{}
	for binary, all := range scraped {
		ids := map[string]bool{}
		for _, s := range all {
			if strings.HasPrefix(s.name, "mapi_") || strings.HasPrefix(s.name, "machine_api_") {
				id := s
				id.value = 0
				ids[id.String()] = true
			}
		}
		for id := range ids {
			servedBy[id] = append(servedBy[id], binary)
		}
	}
	for n, binaries := range servedBy {
		if len(binaries) > 1 {
			sort.Strings(binaries)
			t.Errorf("%s is served by %v; want exactly one binary", n, binaries)
		}
	}
	t.Logf("scraped %d targets; Machine API series: %d", len(targets), len(servedBy))
}
