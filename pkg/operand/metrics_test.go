package operand_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// servedSeries is registered by the test and must be in the body.
var servedSeries = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "machine_api_test_secure_metrics_served",
	Help: "Set by the operand package's secure metrics test.",
})

func init() {
	servedSeries.Set(1)
	ctrlmetrics.Registry.MustRegister(servedSeries)
}

// applyOperandRBAC creates, in ns, what the operator renders for the
// operands' identity: the ServiceAccount machine-api-controllers and its
// roles and bindings (kubemark platform).
func applyOperandRBAC(t *testing.T, ns string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range []string{"0000_30_machine-api-operator_09_serviceaccount.yaml", "0000_30_machine-api-operator_09_controllers-rbac.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "install", file))
		if err != nil {
			t.Fatal(err)
		}
		// The install's objects, moved into this test's namespace.
		data = []byte(strings.ReplaceAll(string(data), config.DefaultNamespace, ns))
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			switch u.GetKind() {
			case "ServiceAccount":
				if u.GetName() != render.ControllersServiceAccountName {
					continue
				}
			case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			if err := env.Client.Create(context.Background(), u); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			n++
		}
	}
	if n != 5 {
		t.Fatalf("install/ holds %d operand RBAC objects, want the ServiceAccount, ClusterRole, ClusterRoleBinding, Role, RoleBinding", n)
	}
}

// token returns a token of ServiceAccount name in ns (created if missing).
func token(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := env.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// allowMetrics binds a ClusterRole with GET on /metrics to the
// ServiceAccount and waits until the API server's authorizer says so (the
// filter caches a denial for 30s, so the first scrape must not race RBAC).
func allowMetrics(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	name := ns + "-metrics-reader"
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}}
	for _, o := range []client.Object{cr, crb} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	user := "system:serviceaccount:" + ns + ":" + sa
	poll.Eventually(t, 10*time.Second, user+" allowed GET /metrics", poll.Check(func() error {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := env.Client.Create(ctx, sar); err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
		}
		return nil
	}))
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startOperand runs an operand manager as a binary builds it (operand.Options
// → NewManager), with the operands' identity, serving metrics on a free port.
func startOperand(t *testing.T, ns, certDir string) string {
	t.Helper()
	addr := freeAddress(t)
	opts := operand.Defaults("secure-metrics-test", addr, "0")
	opts.Namespace, opts.LeaderElect, opts.MetricsCertDir = ns, false, certDir
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + render.ControllersServiceAccountName}
	mgr, err := opts.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, mgr)
	return addr
}

type scrape struct {
	status int
	body   string
	// cn is the served certificate's common name (without certutil's
	// "@<time>" suffix).
	cn string
}

func get(t *testing.T, addr, bearer string) (scrape, error) {
	t.Helper()
	var cn string
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // the certificate is self-signed; what it is is checked below
		VerifyConnection: func(cs tls.ConnectionState) error {
			cn, _, _ = strings.Cut(cs.PeerCertificates[0].Subject.CommonName, "@")
			return nil
		},
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return scrape{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return scrape{status: resp.StatusCode, body: string(body), cn: cn}, err
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "operand-metrics-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// TestSecureMetrics: an operand's metrics endpoint, run with exactly the
// operand RBAC that install/ ships, is HTTPS with a self-signed
// certificate and answers 401 without (or with invalid) credentials, 403 to
// a ServiceAccount without GET /metrics, and 200 with the series to one
// bound to a ClusterRole with nonResourceURLs ["/metrics"] get.
func TestSecureMetrics(t *testing.T) {
	ns := newNamespace(t)
	applyOperandRBAC(t, ns)
	addr := startOperand(t, ns, "")
	denied := token(t, ns, "no-rbac")
	allowed := token(t, ns, "scraper")
	allowMetrics(t, ns, "scraper")

	var s scrape
	poll.Eventually(t, 20*time.Second, "the metrics server", poll.Check(func() error {
		var err error
		s, err = get(t, addr, "")
		return err
	}))
	if s.status != http.StatusUnauthorized {
		t.Errorf("no credentials: status %d, want 401; body %q", s.status, s.body)
	}
	if s.cn != "localhost" {
		t.Errorf("served certificate CN %q, want controller-runtime's self-signed localhost", s.cn)
	}
	if s, err := get(t, addr, "not-a-token"); err != nil || s.status != http.StatusUnauthorized {
		t.Errorf("invalid token: status %d (%v), want 401", s.status, err)
	}
	if s, err := get(t, addr, denied); err != nil || s.status != http.StatusForbidden {
		t.Errorf("token without RBAC: status %d (%v), want 403; body %q", s.status, err, s.body)
	}
	s, err := get(t, addr, allowed)
	if err != nil || s.status != http.StatusOK {
		t.Fatalf("token allowed GET /metrics: status %d (%v), want 200; body %q", s.status, err, s.body)
	}
	for _, want := range []string{"machine_api_test_secure_metrics_served 1", "# TYPE rest_client_requests_total counter"} {
		if !strings.Contains(s.body, want) {
			t.Errorf("body lacks %q:\n%.2000s", want, s.body)
		}
	}
}

// TestSecureMetricsCertDir: with --metrics-cert-dir the certificate there is
// served (and one that appears later, as an optional Secret volume's does,
// replaces the self-signed one without a restart).
func TestSecureMetricsCertDir(t *testing.T) {
	ns := newNamespace(t)
	dir := t.TempDir()
	addr := startOperand(t, ns, dir)
	var s scrape
	poll.Eventually(t, 20*time.Second, "the metrics server", poll.Check(func() error {
		var err error
		s, err = get(t, addr, "")
		return err
	}))
	if s.cn != "localhost" || s.status != http.StatusUnauthorized {
		t.Errorf("empty cert dir: CN %q status %d, want the self-signed localhost and 401", s.cn, s.status)
	}
	const host = "machine-api-controllers.openshift-machine-api.svc"
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, []string{host})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	// The certificate watcher picks the files up.
	poll.Eventually(t, 20*time.Second, "the certificate of the cert dir served", poll.Check(func() error {
		s, err := get(t, addr, "")
		if err != nil || s.cn != host {
			return fmt.Errorf("served CN %q (%v), want %s", s.cn, err, host)
		}
		return nil
	}))
	pool, err := certutil.NewPoolFromBytes(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("verifying the served certificate against its CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
}
