package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// The operand's metrics ports (container port names) by component.
var componentPorts = map[string]string{
	"machine-controller-manager": "machine-mtrc",
	"machineset-controller":      "machineset-mtrc",
	"nodelink-controller":        "nodelink-mtrc",
	"machine-healthcheck":        "mhc-mtrc",
}

// metricsReader is a ServiceAccount allowed GET /metrics, created for the
// benchmark, whose token reads the components' client request counters.
const metricsReader = "bench-metrics-reader"

func newMachineDeployment(o options) *mdv1beta1.MachineDeployment {
	ms := newMachineSet(o)
	surge, unavailable := intstr.Parse(o.maxSurge), intstr.Parse(o.maxUnavailable)
	return &mdv1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: o.namespace},
		Spec: mdv1beta1.MachineDeploymentSpec{
			Replicas: ptr.To(int32(o.replicas)),
			Selector: ms.Spec.Selector,
			Template: ms.Spec.Template,
			Strategy: mdv1beta1.MachineDeploymentStrategy{
				Type:          mdv1beta1.RollingUpdateStrategy,
				RollingUpdate: &mdv1beta1.RollingUpdateMachineDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
		},
	}
}

// runRollout is the rollout benchmark: a MachineDeployment of o.replicas
// Machines, once Running, gets a new template; it measures until every
// Machine is of the new template, Running with a Ready Node, and every old
// Machine and its Node is gone, and reports the API requests per replaced
// Machine by resource and verb (the API server's counters) and by
// component and verb (each component's client counters).
func runRollout(ctx context.Context, o options, c client.Client, kube kubernetes.Interface, r client.Reader) error {
	md := newMachineDeployment(o)
	if err := c.Delete(ctx, md); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting a leftover MachineDeployment: %w", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		return gone(ctx, r, o)
	}); err != nil {
		return fmt.Errorf("waiting for leftover Machines to go: %w", err)
	}
	token, err := metricsToken(ctx, c, o.namespace)
	if err != nil {
		return err
	}
	targets, err := componentTargets(ctx, c, o.namespace)
	if err != nil {
		return err
	}
	md = newMachineDeployment(o)
	if err := c.Create(ctx, md); err != nil {
		return fmt.Errorf("creating MachineDeployment %s: %w", o.name, err)
	}
	defer func() { _ = c.Delete(context.Background(), md) }()
	start := time.Now()
	if err := waitRolledOut(ctx, r, o, "4Gi"); err != nil {
		return fmt.Errorf("creating %d Machines: %w", o.replicas, err)
	}
	fmt.Printf("MachineDeployment %s/%s, %d replicas, RollingUpdate maxSurge %s maxUnavailable %s\n", o.namespace, o.name, o.replicas, o.maxSurge, o.maxUnavailable)
	fmt.Printf("  created: all Running with Ready Nodes in %.2fs\n", time.Since(start).Seconds())

	before, err := requestCounts(ctx, kube)
	if err != nil {
		return err
	}
	compBefore, err := componentCounts(ctx, targets, token)
	if err != nil {
		return err
	}
	start = time.Now()
	patch := []byte(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"memory":"8Gi"}}}}}}`)
	if err := c.Patch(ctx, md, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("changing the template: %w", err)
	}
	if err := waitRolledOut(ctx, r, o, "8Gi"); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	took := time.Since(start)
	after, err := requestCounts(ctx, kube)
	if err != nil {
		return err
	}
	compAfter, err := componentCounts(ctx, targets, token)
	if err != nil {
		return err
	}
	reqs := diff(after, before)
	creates := reqs[key{verb: "POST", resource: "machines"}]
	fmt.Printf("  rollout of %d Machines: every Machine of the new template, Running with a Ready Node, every old Machine and Node gone in %.2fs\n", o.replicas, took.Seconds())
	fmt.Printf("  Machine create requests accepted: %d (expected %d)\n", creates, o.replicas)
	report("rollout", reqs, o.replicas)
	fmt.Printf("  rollout: client requests per replaced Machine by component and verb (rest_client_requests_total):\n")
	var names []string
	for n := range compAfter {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d := diff(compAfter[n], compBefore[n])
		total := 0
		var verbs []key
		for k, v := range d {
			total += v
			verbs = append(verbs, k)
		}
		sort.Slice(verbs, func(i, j int) bool { return verbs[i].verb < verbs[j].verb })
		fmt.Printf("    %-28s %6d  (%.2f)", n, total, float64(total)/float64(o.replicas))
		for _, k := range verbs {
			fmt.Printf("  %s %.2f", k.verb, float64(d[k])/float64(o.replicas))
		}
		fmt.Println()
	}
	if creates != o.replicas {
		return fmt.Errorf("%d Machine create requests to replace %d Machines", creates, o.replicas)
	}
	return nil
}

// waitRolledOut waits until exactly o.replicas benchmark Machines exist,
// all of the template with memory, Running with a Ready Node, and no Node
// named after a benchmark Machine lacks its Machine.
func waitRolledOut(ctx context.Context, r client.Reader, o options, memory string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.timeout, true, func(ctx context.Context) (bool, error) {
		var machines machinev1beta1.MachineList
		if err := r.List(ctx, &machines, client.InNamespace(o.namespace), client.MatchingLabels{poolLabel: o.name}); err != nil {
			return false, err
		}
		names := map[string]bool{}
		for i := range machines.Items {
			m := &machines.Items[i]
			names[m.Name] = true
			node := &corev1.Node{}
			if m.Spec.ProviderSpec.Value == nil || !strings.Contains(string(m.Spec.ProviderSpec.Value.Raw), `"memory":"`+memory+`"`) ||
				m.Status.NodeRef == nil || r.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node) != nil || !runningWithReadyNode(m, node) {
				return false, nil
			}
		}
		if len(machines.Items) != o.replicas {
			return false, nil
		}
		var nodes corev1.NodeList
		if err := r.List(ctx, &nodes); err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, o.name+"-") && !names[n.Name] {
				return false, nil
			}
		}
		return true, nil
	})
}

// metricsToken returns a token of a ServiceAccount allowed GET /metrics
// (the components authorize their metrics with SubjectAccessReviews).
func metricsToken(ctx context.Context, c client.Client, namespace string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: metricsReader}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsReader},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: metricsReader}}}
	for _, obj := range []client.Object{sa, cr, crb} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating the metrics reader: %w", err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("a token of %s: %w", metricsReader, err)
	}
	return tr.Status.Token, nil
}

// componentTargets returns each running component's metrics address (the
// operand pod's IP and the component's metrics port).
func componentTargets(ctx context.Context, c client.Client, namespace string) (map[string]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"k8s-app": "controller"}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			for _, port := range ctr.Ports {
				for comp, name := range componentPorts {
					if port.Name == name {
						out[comp] = net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port.ContainerPort)))
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running operand pod (k8s-app=controller) with metrics ports in %s", namespace)
	}
	return out, nil
}

// componentCounts reads rest_client_requests_total of each component, by
// verb (summed over codes and hosts). A first scrape may be refused while
// the new token's authorization propagates: it is retried for a minute.
func componentCounts(ctx context.Context, targets map[string]string, token string) (map[string]map[key]int, error) {
	out := map[string]map[key]int{}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // self-signed without service-ca
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 15 * time.Second}
	for comp, addr := range targets {
		var body []byte
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			if err != nil {
				return false, err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := hc.Do(req)
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			body, err = io.ReadAll(resp.Body)
			return err == nil && resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			return nil, fmt.Errorf("scraping %s at %s: %w", comp, addr, err)
		}
		counts := map[key]int{}
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "rest_client_requests_total{") {
				continue
			}
			_, rest, _ := strings.Cut(line, `method="`)
			method, _, _ := strings.Cut(rest, `"`)
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", comp, line, err)
			}
			counts[key{verb: method}] += int(v)
		}
		out[comp] = counts
	}
	return out, nil
}
