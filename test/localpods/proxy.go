package localpods

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
)

// serviceProxy plays kube-proxy for the Services of the runner's namespace:
// a listener on each ClusterIP:port on the host forwards every connection to
// the target port of a Ready local pod the Service selects. (Endpoints and
// EndpointSlices refuse loopback addresses, so the pods never appear there;
// the proxy computes the endpoints from the pods itself.)
type serviceProxy struct {
	r         *Runner
	mu        sync.Mutex
	listeners map[string]*proxyListener // by ClusterIP:port
}

type proxyListener struct {
	ln      net.Listener
	service string // namespace/name
	port    corev1.ServicePort
	next    atomic.Uint64
}

// sync opens and closes listeners to match the Services.
func (p *serviceProxy) sync() {
	if p == nil || p.r.services == nil {
		return
	}
	svcs, err := p.r.services.Services(p.r.opts.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	want := map[string]*proxyListener{}
	for _, s := range svcs {
		ip := s.Spec.ClusterIP
		if len(s.Spec.Selector) == 0 || ip == "" || ip == corev1.ClusterIPNone || !isLoopback(ip) {
			continue
		}
		for _, port := range s.Spec.Ports {
			if protocol(port.Protocol) != corev1.ProtocolTCP {
				continue
			}
			want[net.JoinHostPort(ip, strconv.Itoa(int(port.Port)))] = &proxyListener{service: s.Namespace + "/" + s.Name, port: port}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.listeners {
		if w, ok := want[addr]; !ok || w.service != l.service || w.port.TargetPort != l.port.TargetPort {
			_ = l.ln.Close()
			delete(p.listeners, addr)
		}
	}
	for addr, l := range want {
		if _, ok := p.listeners[addr]; ok {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			klog.InfoS("cannot proxy Service", "service", l.service, "address", addr, "err", err)
			continue
		}
		l.ln = ln
		p.listeners[addr] = l
		go forward(ln, func(ctx context.Context) (net.Conn, error) { return p.dial(ctx, l) })
	}
}

// dial connects to a pod the Service selects whose containers that run are Ready, round robin.
func (p *serviceProxy) dial(ctx context.Context, l *proxyListener) (net.Conn, error) {
	ns, name := splitKey(l.service)
	svc, err := p.r.services.Services(ns).Get(name)
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	type endpoint struct {
		s    *sandbox
		port int
	}
	var eps []endpoint
	p.r.mu.Lock()
	for _, s := range p.r.sandboxes {
		pod := s.currentPod()
		if s.stopping || pod.Namespace != ns || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if port := targetPort(pod, l.port.TargetPort, l.port.Port); servesTraffic(s.containers) && port > 0 {
			eps = append(eps, endpoint{s, port})
		}
	}
	p.r.mu.Unlock()
	if len(eps) == 0 {
		return nil, errors.New("no ready endpoint")
	}
	ep := eps[l.next.Add(1)%uint64(len(eps))]
	return dialInNetNS(ctx, ep.s.netnsPath(), net.JoinHostPort(ep.s.ip, strconv.Itoa(ep.port)))
}

func (p *serviceProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.listeners {
		_ = l.ln.Close()
		delete(p.listeners, addr)
	}
}

// targetPort resolves a Service's targetPort on a pod (a number, or the name
// of one of its container ports); the Service port when unset.
func targetPort(pod *corev1.Pod, tp intstr.IntOrString, port int32) int {
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal {
					return int(cp.ContainerPort)
				}
			}
		}
		return 0
	case tp.IntValue() > 0:
		return tp.IntValue()
	default:
		return int(port)
	}
}

func isLoopback(ip string) bool {
	a := net.ParseIP(ip)
	return a != nil && a.IsLoopback()
}

func splitKey(key string) (string, string) {
	for i := range key {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}

// servesTraffic: every container that runs is Ready (and one runs). A container of another
// image (NotRunLocally) is left out: on a real cluster it would run, and counting it would
// leave a pod with a cloud provider's image (a platform switched to AWS) without its webhooks.
func servesTraffic(containers []*container) bool {
	running := false
	for _, c := range containers {
		if c.notRun != "" {
			continue
		}
		if !c.snapshot().Ready {
			return false
		}
		running = true
	}
	return running
}
