package localpods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Options configure a Runner.
type Options struct {
	// Client talks to the local cluster with rights to read pods, Secrets,
	// ConfigMaps and Services, write pod status, delete pods and request
	// ServiceAccount tokens. Required.
	Client kubernetes.Interface
	// APIServer is host:port of the API server; inside each pod the
	// kubernetes Service's ClusterIP leads there. Must be in 127.0.0.0/8.
	APIServer string
	// Namespace and Selector choose the pods to run (kwok must be told to
	// leave exactly these alone).
	Namespace string
	Selector  labels.Selector
	// Images are image repositories (without tag) whose containers run.
	// The images of ImagesConfigMap's keys machineAPIOperator and
	// clusterAPIControllerKubemark are added.
	Images          []string
	ImagesConfigMap string
	// BinDir holds the binaries; StateDir the pods' volumes and network
	// namespaces; LogDir the containers' logs.
	BinDir, StateDir, LogDir string
	// SelfExe is the runner's binary, re-executed as ContainerInit.
	SelfExe string
	// PodCIDR is where pod IPs come from; HostIP is every pod's hostIP.
	PodCIDR netip.Prefix
	HostIP  string
	// DefaultUID is the image's USER.
	DefaultUID int
	// HostForwards are host:port addresses on 127.0.0.0/8 that lead from
	// inside every pod to the same address on the host (the local vSphere's
	// vcsim, hack/vsphere), since a pod's namespace has only its loopback.
	HostForwards []string
	// BackoffInitial and BackoffMax bound the restart back-off.
	BackoffInitial, BackoffMax time.Duration
}

// Runner runs the selected pods' containers as local processes.
type Runner struct {
	opts     Options
	pods     corelisters.PodLister
	services corelisters.ServiceLister
	look     *listerLookups
	queue    workqueue.TypedRateLimitingInterface[string]
	volumes  *volumeWriter
	proxy    *serviceProxy

	mu        sync.Mutex
	sandboxes map[string]*sandbox // by namespace/name
	ips       map[string]bool
	k8sSvc    *corev1.Service
}

// sandbox is a running pod: its network namespace, forwarders, volumes and
// containers.
type sandbox struct {
	key string
	// pod is the latest pod object, with the sandbox's IPs in its status;
	// sync replaces it while the containers' supervisors and the proxy read
	// it: use currentPod and setPod.
	podMu      sync.Mutex
	pod        *corev1.Pod
	uid        types.UID
	ip         string
	dir        string
	volumes    map[string]string
	containers []*container
	closers    []io.Closer
	cancel     context.CancelFunc
	startTime  metav1.Time
	stopping   bool
	stopped    chan struct{}
	stopOnce   sync.Once
}

func (s *sandbox) netnsPath() string { return filepath.Join(s.dir, "netns") }

func (s *sandbox) currentPod() *corev1.Pod {
	s.podMu.Lock()
	defer s.podMu.Unlock()
	return s.pod
}

func (s *sandbox) setPod(pod *corev1.Pod) {
	s.podMu.Lock()
	defer s.podMu.Unlock()
	s.pod = pod
}

// withIPs returns pod with the sandbox's pod IP and the host IP in its
// status: the containers' downward API (status.podIP) sees them before the
// status is written, as with a kubelet.
func (r *Runner) withIPs(pod *corev1.Pod, ip string) *corev1.Pod {
	if pod.Status.PodIP == ip && pod.Status.HostIP == r.opts.HostIP {
		return pod
	}
	p := pod.DeepCopy()
	p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	p.Status.HostIP, p.Status.HostIPs = r.opts.HostIP, []corev1.HostIP{{IP: r.opts.HostIP}}
	return p
}

// New returns a Runner.
func New(opts Options) *Runner {
	return &Runner{
		opts:      opts,
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		sandboxes: map[string]*sandbox{},
		ips:       map[string]bool{},
	}
}

// Run runs the pods until ctx ends, then stops their processes.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.cleanStale(); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(r.opts.Client, 30*time.Second, informers.WithNamespace(r.opts.Namespace))
	podInf := factory.Core().V1().Pods()
	r.pods = podInf.Lister()
	r.services = factory.Core().V1().Services().Lister()
	r.look = &listerLookups{cms: factory.Core().V1().ConfigMaps().Lister(), secrets: factory.Core().V1().Secrets().Lister()}
	r.volumes = &volumeWriter{client: r.opts.Client, look: r.look, clock: clock.RealClock{}, tokens: map[string]issuedToken{}}
	r.proxy = &serviceProxy{r: r, listeners: map[string]*proxyListener{}}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	_, _ = podInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p, ok := obj.(*corev1.Pod)
			return ok && r.opts.Selector.Matches(labels.Set(p.Labels))
		},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue},
	})
	svcSync := func(any) { r.proxy.sync() }
	_, _ = factory.Core().V1().Services().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: svcSync, UpdateFunc: func(_, o any) { svcSync(o) }, DeleteFunc: svcSync,
	})
	// Secrets and ConfigMaps: refresh the volumes of every pod.
	refresh := func(any) {
		r.mu.Lock()
		for k := range r.sandboxes {
			r.queue.Add(k)
		}
		r.mu.Unlock()
	}
	_, _ = factory.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { refresh(o) }, AddFunc: refresh})
	_, _ = factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { refresh(o) }, AddFunc: refresh})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	k8s, err := r.opts.Client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the kubernetes Service: %w", err)
	}
	r.k8sSvc = k8s
	for _, p := range mustList(r.pods.List(r.opts.Selector)) {
		if ip := p.Status.PodIP; ip != "" {
			r.ips[ip] = true
		}
	}
	klog.InfoS("running local pods", "namespace", r.opts.Namespace, "selector", r.opts.Selector.String())

	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	// Renew tokens and volumes periodically even when nothing changes.
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				refresh(nil)
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
	wg.Wait()
	r.proxy.close()
	// Stop every pod's processes; the pods stay (a kubelet that stops does
	// not delete its pods either).
	r.mu.Lock()
	all := make([]*sandbox, 0, len(r.sandboxes))
	for _, s := range r.sandboxes {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		r.stopSandbox(s, 5*time.Second)
	}
	return nil
}

func mustList(pods []*corev1.Pod, _ error) []*corev1.Pod { return pods }

func (r *Runner) processNext(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		klog.InfoS("syncing local pod", "pod", key, "err", err)
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync makes the processes of one pod match the pod and reports them.
func (r *Runner) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := r.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return err
	}
	r.mu.Lock()
	s := r.sandboxes[key]
	r.mu.Unlock()
	if s != nil && (pod == nil || pod.UID != s.uid) {
		// Gone (or replaced by a pod of the same name): stop at once.
		r.stopSandbox(s, 0)
		r.mu.Lock()
		delete(r.sandboxes, key)
		r.mu.Unlock()
		s = nil
	}
	if pod == nil || pod.Spec.NodeName == "" || !r.opts.Selector.Matches(labels.Set(pod.Labels)) {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		return r.terminate(ctx, key, pod, s)
	}
	if s == nil {
		if s, err = r.startSandbox(ctx, key, pod); err != nil {
			return r.reportPending(ctx, pod, err)
		}
	} else {
		view := r.withIPs(pod, s.ip)
		s.setPod(view)
		if _, err := r.volumes.write(ctx, view, filepath.Join(s.dir, "volumes")); err != nil {
			klog.InfoS("refreshing volumes", "pod", key, "err", err)
		}
	}
	return r.reportStatus(ctx, pod, s)
}

// terminate stops a deleted pod's containers (SIGTERM, then SIGKILL after
// its grace period) and then removes the pod, as a kubelet does.
func (r *Runner) terminate(ctx context.Context, key string, pod *corev1.Pod, s *sandbox) error {
	if s != nil {
		r.mu.Lock()
		already := s.stopping
		s.stopping = true
		r.mu.Unlock()
		if !already {
			grace := 30 * time.Second
			if pod.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
			}
			go func() {
				r.stopSandbox(s, grace)
				r.queue.Add(key)
			}()
			return nil
		}
		select {
		case <-s.stopped:
		default:
			return nil // still stopping; requeued when done
		}
		r.mu.Lock()
		delete(r.sandboxes, key)
		r.mu.Unlock()
	}
	err := r.opts.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64(0)),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// startSandbox creates the pod's network namespace, volumes and forwarders
// and starts its containers.
func (r *Runner) startSandbox(ctx context.Context, key string, pod *corev1.Pod) (*sandbox, error) {
	ip, err := r.assignIP(pod)
	if err != nil {
		return nil, err
	}
	pod = r.withIPs(pod, ip)
	s := &sandbox{key: key, pod: pod, uid: pod.UID, ip: ip, dir: filepath.Join(r.opts.StateDir, string(pod.UID)), startTime: metav1.Now(), stopped: make(chan struct{})}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	fail := func(err error) (*sandbox, error) {
		r.cleanupSandbox(s)
		return nil, err
	}
	if s.volumes, err = r.volumes.write(ctx, pod, filepath.Join(s.dir, "volumes")); err != nil {
		return fail(fmt.Errorf("FailedMount: %w", err))
	}
	if err := newNetNS(s.netnsPath()); err != nil {
		return fail(err)
	}
	// Inside the pod: the kubernetes Service's ClusterIP leads to the API server.
	for _, p := range r.k8sSvc.Spec.Ports {
		addr := net.JoinHostPort(r.k8sSvc.Spec.ClusterIP, strconv.Itoa(int(p.Port)))
		ln, err := listenInNetNS(s.netnsPath(), addr)
		if err != nil {
			return fail(fmt.Errorf("listening on %s in the pod: %w", addr, err))
		}
		s.closers = append(s.closers, ln)
		go forward(ln, func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", r.opts.APIServer)
		})
	}
	// Inside the pod: each host forward leads to the same address on the host.
	for _, addr := range r.opts.HostForwards {
		ln, err := listenInNetNS(s.netnsPath(), addr)
		if err != nil {
			return fail(fmt.Errorf("listening on %s in the pod: %w", addr, err))
		}
		s.closers = append(s.closers, ln)
		go forward(ln, func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		})
	}
	// On the host: the pod IP's declared ports lead into the pod.
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if protocol(p.Protocol) != corev1.ProtocolTCP {
				continue
			}
			addr := net.JoinHostPort(ip, strconv.Itoa(int(p.ContainerPort)))
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fail(fmt.Errorf("listening on %s: %w", addr, err))
			}
			s.closers = append(s.closers, ln)
			go forward(ln, func(ctx context.Context) (net.Conn, error) { return dialInNetNS(ctx, s.netnsPath(), addr) })
		}
	}
	restarts := map[string]int32{}
	for _, st := range pod.Status.ContainerStatuses {
		restarts[st.Name] = st.RestartCount
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	notify := func() { r.queue.Add(key) }
	for _, c := range pod.Spec.Containers {
		s.containers = append(s.containers, newContainer(s, c, r.notRun(c), restarts[c.Name], notify))
	}
	r.mu.Lock()
	r.sandboxes[key] = s
	r.mu.Unlock()
	for _, c := range s.containers {
		go c.run(runCtx, r)
	}
	klog.InfoS("started local pod", "pod", key, "ip", ip)
	r.proxy.sync()
	return s, nil
}

// notRun says why a container is not run, or "" when it is.
func (r *Runner) notRun(c corev1.Container) string {
	if r.ImageIsOurs(c.Image) {
		return ""
	}
	return fmt.Sprintf("image %s is not this project's image: the local pod runner does not run it", c.Image)
}

// ImageIsOurs reports whether image is one of this project's images.
func (r *Runner) ImageIsOurs(image string) bool {
	repo := repository(image)
	for _, i := range r.opts.Images {
		if repository(i) == repo {
			return true
		}
	}
	if r.opts.ImagesConfigMap == "" {
		return false
	}
	cm, err := r.look.configMap(r.opts.Namespace, r.opts.ImagesConfigMap)
	if err != nil {
		return false
	}
	var images map[string]string
	if json.Unmarshal([]byte(cm.Data["images.json"]), &images) != nil {
		return false
	}
	for _, k := range []string{"machineAPIOperator", "clusterAPIControllerKubemark"} {
		if images[k] != "" && repository(images[k]) == repo {
			return true
		}
	}
	return false
}

// repository strips an image reference's tag or digest.
func repository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

func (r *Runner) assignIP(pod *corev1.Pod) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil && r.opts.PodCIDR.Contains(ip) {
		r.ips[ip.String()] = true
		return ip.String(), nil
	}
	for ip := r.opts.PodCIDR.Addr().Next(); r.opts.PodCIDR.Contains(ip); ip = ip.Next() {
		if !r.ips[ip.String()] {
			r.ips[ip.String()] = true
			return ip.String(), nil
		}
	}
	return "", errors.New("no free pod IP")
}

// stopSandbox stops the containers (grace 0: SIGKILL) and removes the
// sandbox's namespace, forwarders and volumes.
func (r *Runner) stopSandbox(s *sandbox, grace time.Duration) {
	var wg sync.WaitGroup
	for _, c := range s.containers {
		wg.Go(func() { c.stop(grace) })
	}
	if s.cancel != nil {
		// Stops the supervisors' restarts and probes once SIGTERM is sent.
		go s.cancel()
	}
	wg.Wait()
	r.cleanupSandbox(s)
	// A pod that is deleted for good while its grace period runs, or the
	// Runner stopping meanwhile, stops the sandbox a second time.
	s.stopOnce.Do(func() { close(s.stopped) })
	klog.InfoS("stopped local pod", "pod", s.key)
}

func (r *Runner) cleanupSandbox(s *sandbox) {
	for _, c := range s.closers {
		_ = c.Close()
	}
	_ = removeNetNS(s.netnsPath())
	_ = os.RemoveAll(s.dir)
	r.volumes.forget(string(s.uid))
	r.mu.Lock()
	delete(r.ips, s.ip)
	r.mu.Unlock()
	r.proxy.sync()
}

// cleanStale kills processes and removes namespaces a previous runner left.
func (r *Runner) cleanStale() error {
	if err := os.MkdirAll(r.opts.StateDir, 0o755); err != nil {
		return err
	}
	dirs, err := os.ReadDir(r.opts.StateDir)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		dir := filepath.Join(r.opts.StateDir, d.Name())
		pids, _ := filepath.Glob(filepath.Join(dir, "containers", "*", "pid"))
		for _, p := range pids {
			data, _ := os.ReadFile(p)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 1 {
				if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.HasPrefix(exe, r.opts.BinDir) {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
		_ = removeNetNS(filepath.Join(dir, "netns"))
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing %s: %w", dir, err)
		}
	}
	return nil
}

// reportPending records why a pod's sandbox could not start.
func (r *Runner) reportPending(ctx context.Context, pod *corev1.Pod, cause error) error {
	st := pod.Status.DeepCopy()
	st.Phase = corev1.PodPending
	st.HostIP = r.opts.HostIP
	st.HostIPs = []corev1.HostIP{{IP: r.opts.HostIP}}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: cause.Error()}},
		})
	}
	if err := r.writeStatus(ctx, pod, st); err != nil {
		return err
	}
	return cause
}

// reportStatus writes the pod's status from its containers' states, only
// when it changed.
func (r *Runner) reportStatus(ctx context.Context, pod *corev1.Pod, s *sandbox) error {
	st := pod.Status.DeepCopy()
	st.HostIP = r.opts.HostIP
	st.HostIPs = []corev1.HostIP{{IP: r.opts.HostIP}}
	st.PodIP = s.ip
	st.PodIPs = []corev1.PodIP{{IP: s.ip}}
	if st.StartTime == nil {
		st.StartTime = &s.startTime
	}
	st.ContainerStatuses = nil
	allReady, anyStarted := true, false
	for _, c := range s.containers {
		cs := c.snapshot()
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		anyStarted = anyStarted || cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0
	}
	st.Phase = corev1.PodPending
	if anyStarted {
		st.Phase = corev1.PodRunning
	}
	setCondition(st, corev1.PodInitialized, true, "")
	setCondition(st, corev1.ContainersReady, allReady, "ContainersNotReady")
	setCondition(st, corev1.PodReady, allReady, "ContainersNotReady")
	return r.writeStatus(ctx, pod, st)
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason string) {
	status := corev1.ConditionFalse
	if ok {
		status, reason = corev1.ConditionTrue, ""
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != status {
				st.Conditions[i].Status = status
				st.Conditions[i].LastTransitionTime = metav1.Now()
			}
			st.Conditions[i].Reason = reason
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.Now()})
}

func (r *Runner) writeStatus(ctx context.Context, pod *corev1.Pod, st *corev1.PodStatus) error {
	if equality.Semantic.DeepEqual(&pod.Status, st) {
		return nil
	}
	p := pod.DeepCopy()
	p.Status = *st
	_, err := r.opts.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// serviceEnv returns the Service variables for pod's containers.
func (r *Runner) serviceEnv(pod *corev1.Pod) []corev1.EnvVar {
	svcs, _ := r.services.Services(pod.Namespace).List(labels.Everything())
	return serviceEnv(pod, r.k8sSvc, svcs)
}

// forward accepts connections on ln and pipes each to a connection dial
// opens, until ln is closed.
func forward(ln net.Listener, dial func(context.Context) (net.Conn, error)) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out, err := dial(ctx)
			cancel()
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); closeWrite(out); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); closeWrite(in); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

type listerLookups struct {
	cms     corelisters.ConfigMapLister
	secrets corelisters.SecretLister
}

func (l *listerLookups) configMap(ns, name string) (*corev1.ConfigMap, error) {
	return l.cms.ConfigMaps(ns).Get(name)
}

func (l *listerLookups) secret(ns, name string) (*corev1.Secret, error) {
	return l.secrets.Secrets(ns).Get(name)
}
