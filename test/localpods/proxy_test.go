package localpods

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8441}}},
		{Name: "b", Ports: []corev1.ContainerPort{{ContainerPort: 9000}, {Name: "webhook-server", ContainerPort: 8443}}},
	}}}
	for _, tc := range []struct {
		name string
		tp   intstr.IntOrString
		port int32
		want int
	}{
		{name: "named port of the first container", tp: intstr.FromString("metrics"), port: 443, want: 8441},
		{name: "named port of another container", tp: intstr.FromString("webhook-server"), port: 443, want: 8443},
		{name: "unknown name", tp: intstr.FromString("nope"), port: 443, want: 0},
		{name: "numeric", tp: intstr.FromInt32(9443), port: 443, want: 9443},
		{name: "numeric string", tp: intstr.FromString("9443"), port: 443, want: 0}, // a name, and no port has it
		{name: "unset: the Service port", tp: intstr.IntOrString{}, port: 443, want: 443},
		{name: "empty string: the Service port", tp: intstr.FromString(""), port: 8080, want: 8080},
	} {
		if got := targetPort(pod, tc.tp, tc.port); got != tc.want {
			t.Errorf("%s: targetPort(%v, %d) = %d, want %d", tc.name, tc.tp, tc.port, got, tc.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for ip, want := range map[string]bool{
		"127.0.0.1": true, "127.96.0.1": true, "127.255.255.254": true, "::1": true,
		"10.0.0.1": false, "128.0.0.1": false, "": false, "None": false,
	} {
		if got := isLoopback(ip); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", ip, got, want)
		}
	}
}

func TestSplitKey(t *testing.T) {
	for key, want := range map[string][2]string{
		"ns/name": {"ns", "name"},
		"name":    {"", "name"},
		"/name":   {"", "name"},
	} {
		if ns, name := splitKey(key); ns != want[0] || name != want[1] {
			t.Errorf("splitKey(%q) = %q, %q; want %q, %q", key, ns, name, want[0], want[1])
		}
	}
}

// Breaks if: servesTraffic counts a NotRunLocally container (a switched platform's pod
// serves no webhook), or ignores a container of ours that is not Ready.
func TestServesTraffic(t *testing.T) {
	ready := func(name string) *container {
		c := newContainer(nil, corev1.Container{Name: name}, "", 0, func() {})
		c.status.Ready = true
		return c
	}
	starting := func(name string) *container { return newContainer(nil, corev1.Container{Name: name}, "", 0, func() {}) }
	foreign := func(name string) *container {
		return newContainer(nil, corev1.Container{Name: name}, "another image", 0, func() {})
	}
	for _, tc := range []struct {
		name       string
		containers []*container
		want       bool
	}{
		{"ours ready", []*container{ready("a"), ready("b")}, true},
		{"ours ready, a provider's image not run", []*container{ready("a"), foreign("aws")}, true},
		{"one of ours not ready", []*container{ready("a"), starting("b"), foreign("aws")}, false},
		{"nothing of ours", []*container{foreign("aws")}, false},
		{"no containers", nil, false},
	} {
		if got := servesTraffic(tc.containers); got != tc.want {
			t.Errorf("%s: servesTraffic = %v, want %v", tc.name, got, tc.want)
		}
	}
}
