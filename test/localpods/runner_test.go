package localpods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestMain lets the test binary play the runner's binary: the Runner
// re-executes SelfExe (the test binary) as ContainerInit.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == ContainerInitCommand {
		err := ContainerInit(os.Args[2])
		fmt.Fprintf(os.Stderr, "localpods test: starting the container: %v\n", err)
		os.Exit(128)
	}
	if len(os.Args) == 3 && os.Args[1] == spawnCommand {
		spawn(os.Args[2])
	}
	os.Exit(m.Run())
}

const (
	testNamespace = "localpods-test"
	ourImage      = "example.com/ours:tag"
	// podCIDR is a part of the runner's default 127.98.0.0/16 that a local
	// cluster's runner on the same machine does not reach soon.
	podCIDR = "127.98.200.0/24"
	// mountRoot is where the test's volumes are mounted in the containers
	// (bind mounts in their own mount namespaces; the mount points are
	// created on the host and removed after the test).
	mountRoot   = "/etc/fake-operand"
	waitTimeout = 20 * time.Second
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the local pod runner needs root (it creates network and mount namespaces); CI runs these tests as root")
	}
}

// testDirs makes the runner's directories under a fresh directory that the
// containers' user (65532) can traverse, and removes it at the end.
func testDirs(t *testing.T) (base, bin, state, logs string) {
	t.Helper()
	base, err := os.MkdirTemp("", "localpods-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(base); err != nil {
			t.Errorf("removing %s: %v", base, err)
		}
	})
	// base stays 0700 (as a checkout in a `mktemp -d` directory is): the
	// containers, running as another user, must not need to reach anything
	// in it by path.
	bin, state, logs = filepath.Join(base, "bin"), filepath.Join(base, "state"), filepath.Join(base, "logs")
	for _, d := range []string{bin, state, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return base, bin, state, logs
}

// buildFakeOperand builds testdata/fake-operand into dir.
func buildFakeOperand(t *testing.T, dir string) {
	t.Helper()
	out := filepath.Join(dir, "fake-operand")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/fake-operand")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building fake-operand: %v\n%s", err, b)
	}
}

type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	logDir string
}

func (c *cluster) pod(name string) *corev1.Pod {
	c.t.Helper()
	p, err := c.client.CoreV1().Pods(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

// waitPod waits until cond holds for the pod and returns it.
func (c *cluster) waitPod(name, what string, cond func(p *corev1.Pod) bool) *corev1.Pod {
	c.t.Helper()
	var p *corev1.Pod
	poll.Eventually(c.t, waitTimeout, fmt.Sprintf("pod %s: %s", name, what), func(ctx context.Context) (bool, error) {
		var err error
		p, err = c.client.CoreV1().Pods(testNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cond(p) {
			return true, nil
		}
		status, _ := json.MarshalIndent(p.Status, "", "  ")
		return false, fmt.Errorf("status: %s", status)
	})
	return p
}

func (c *cluster) log(pod, container string) string {
	data, _ := os.ReadFile(filepath.Join(c.logDir, pod, container+".log"))
	return string(data)
}

// waitLog waits until the container's log has line.
func (c *cluster) waitLog(pod, container, line string) string {
	c.t.Helper()
	var log string
	poll.Eventually(c.t, waitTimeout, fmt.Sprintf("%s/%s to log %q", pod, container, line), func(context.Context) (bool, error) {
		log = c.log(pod, container)
		if hasLine(log, line) {
			return true, nil
		}
		return false, fmt.Errorf("log:\n%s", log)
	})
	return log
}

func hasLine(log, line string) bool {
	for l := range strings.SplitSeq(log, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// containerPID is the process of a running container, from its containerID.
func containerPID(t *testing.T, cs corev1.ContainerStatus) int {
	t.Helper()
	s, ok := strings.CutPrefix(cs.ContainerID, "local://")
	if !ok {
		t.Fatalf("containerID %q, want local://<pid>", cs.ContainerID)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 1 {
		t.Fatalf("containerID %q, want local://<pid>", cs.ContainerID)
	}
	return n
}

func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// A zombie (not reaped yet) is gone too.
	_, rest, _ := strings.Cut(string(data), ") ")
	return strings.HasPrefix(rest, "Z")
}

// processExited holds once process pid has exited.
func processExited(pid int) poll.Condition {
	return func(context.Context) (bool, error) {
		if processGone(pid) {
			return true, nil
		}
		return false, fmt.Errorf("process %d is still running", pid)
	}
}

// removed holds once none of paths exists.
func removed(paths ...string) poll.Condition {
	return func(context.Context) (bool, error) {
		for _, p := range paths {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				return false, fmt.Errorf("%s still exists (stat: %v)", p, err)
			}
		}
		return true, nil
	}
}

// get fetches url from the host (only 127.0.0.0/8 addresses).
func get(u string) (string, error) {
	if ip := net.ParseIP(strings.Split(strings.TrimPrefix(u, "http://"), ":")[0]); ip == nil || !ip.IsLoopback() {
		panic("the test only talks to 127.0.0.0/8: " + u)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("%s: %s", u, resp.Status)
	}
	return string(body), nil
}

// freeClusterIP returns an address of 127.96.0.0/16 where nothing listens
// on port yet (a local cluster may run on the same machine).
func freeClusterIP(t *testing.T, port int) string {
	t.Helper()
	for i := 1; i < 250; i++ {
		ip := fmt.Sprintf("127.96.211.%d", i)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			_ = ln.Close()
			return ip
		}
	}
	t.Fatal("no free address in 127.96.211.0/24")
	return ""
}

func TestRunner(t *testing.T) {
	requireRoot(t)
	began := time.Now()
	ctx := context.Background()

	// Mount points the containers need are created on the host: remove them
	// at the end (os.Remove only removes empty directories).
	t.Cleanup(func() {
		for _, d := range []string{mountRoot + "/tls", mountRoot + "/serviceaccount", mountRoot + "/scratch", mountRoot + "/settings", mountRoot} {
			_ = os.Remove(d)
		}
	})
	_, binDir, stateDir, logDir := testDirs(t)
	buildFakeOperand(t, binDir)
	t.Logf("built fake-operand in %s", time.Since(began).Round(time.Millisecond))

	env := testenv.Start(t, testenv.Options{APIServerArgs: map[string]string{"service-cluster-ip-range": "127.96.0.0/16"}})
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiServer, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, client: client, logDir: logDir}
	t.Logf("API server up at %s", time.Since(began).Round(time.Millisecond))

	var kubeSvc *corev1.Service
	poll.Eventually(t, waitTimeout, "the kubernetes Service", func(ctx context.Context) (bool, error) {
		kubeSvc, err = client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, err
	})
	if kubeSvc.Spec.ClusterIP != "127.96.0.1" {
		t.Fatalf("kubernetes Service ClusterIP %s, want 127.96.0.1", kubeSvc.Spec.ClusterIP)
	}

	// The namespace and what the pods refer to. envtest runs no
	// controller-manager: the ServiceAccount and kube-root-ca.crt are made
	// here.
	create := func(obj interface {
		GetName() string
	}, fn func() error) {
		t.Helper()
		if err := fn(); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	create(ns, func() error {
		_, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fake-operand", Namespace: testNamespace}}
	create(sa, func() error {
		_, err := client.CoreV1().ServiceAccounts(testNamespace).Create(ctx, sa, metav1.CreateOptions{})
		return err
	})
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: testNamespace}, Data: map[string]string{"ca.crt": string(env.Config.CAData)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: testNamespace}, Data: map[string]string{"LEVEL": "2", "MODE": "fast"}},
	} {
		create(cm, func() error {
			_, err := client.CoreV1().ConfigMaps(testNamespace).Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: testNamespace}, Data: map[string][]byte{"tls.crt": []byte("cert-v1"), "tls.key": []byte("key-v1")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: testNamespace}, Data: map[string][]byte{"user": []byte("admin")}},
	} {
		create(s, func() error {
			_, err := client.CoreV1().Secrets(testNamespace).Create(ctx, s, metav1.CreateOptions{})
			return err
		})
	}
	clusterIP := freeClusterIP(t, 443)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "fake-operand-webhook", Namespace: testNamespace},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Selector:  map[string]string{"app": "fake-operand"},
			Ports:     []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("http")}},
		},
	}
	create(svc, func() error {
		_, err := client.CoreV1().Services(testNamespace).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})

	// A server on the host that the pods reach through a host forward.
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "from the host") })}
	go func() { _ = hostSrv.Serve(hostLn) }()
	t.Cleanup(func() { _ = hostSrv.Close() })

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := New(Options{
		HostForwards:   []string{hostLn.Addr().String()},
		Client:         client,
		APIServer:      apiServer.Host,
		Namespace:      testNamespace,
		Selector:       labels.SelectorFromSet(labels.Set{"localpods-test": "run"}),
		Images:         []string{"example.com/ours"},
		BinDir:         binDir,
		StateDir:       stateDir,
		LogDir:         logDir,
		SelfExe:        self,
		PodCIDR:        netip.MustParsePrefix(podCIDR),
		HostIP:         "127.0.0.1",
		DefaultUID:     65532,
		BackoffInitial: 200 * time.Millisecond,
		BackoffMax:     time.Second,
	})
	runCtx, cancel := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(runCtx) }()
	var stopOnce sync.Once
	stop := func() error {
		var err error
		stopOnce.Do(func() {
			cancel()
			select {
			case err = <-runErr:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("Run did not return 30 s after its context ended")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})

	run := map[string]string{"localpods-test": "run"}
	yes := true
	operand := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "operand", Namespace: testNamespace, Labels: map[string]string{"localpods-test": "run", "app": "fake-operand"}},
		Spec: corev1.PodSpec{
			NodeName:                      "local",
			ServiceAccountName:            "fake-operand",
			TerminationGracePeriodSeconds: new(int64(20)),
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   ourImage,
				Command: []string{"/fake-operand"},
				Args: []string{
					"--port=$(PORT)", "--name=$(POD_NAME)", "--escaped=$$(POD_NAME)", "--undefined=$(UNDEFINED)",
					"--file=" + mountRoot + "/tls/tls.crt",
					"--file=" + mountRoot + "/serviceaccount/token",
					"--file=" + mountRoot + "/serviceaccount/ca.crt",
					"--file=" + mountRoot + "/serviceaccount/namespace",
					"--watch=" + mountRoot + "/tls/tls.crt",
					"--whoami=" + mountRoot + "/serviceaccount",
				},
				Env: []corev1.EnvVar{
					{Name: "PORT", Value: "9440"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "GREETING", Value: "hello $(POD_NAME)"},
					{Name: "USER_NAME", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "user"}}},
					{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "LEVEL"}}},
					{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "x", Optional: &yes}}},
				},
				EnvFrom:        []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 9440}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}}, PeriodSeconds: 1},
				LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(9440)}}, PeriodSeconds: 1, FailureThreshold: 5},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "tls", MountPath: mountRoot + "/tls", ReadOnly: true},
					{Name: "kube-api-access", MountPath: mountRoot + "/serviceaccount", ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				}}}},
			},
		},
	}
	mixed := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mixed", Namespace: testNamespace, Labels: run},
		Spec: corev1.PodSpec{
			NodeName: "local",
			Containers: []corev1.Container{
				{
					Name: "ours", Image: ourImage, Command: []string{"/fake-operand"},
					Args: []string{
						"--port=9441", "--ready",
						"--try-write=" + mountRoot + "/rootfs-write", "--try-write=" + mountRoot + "/scratch/file", "--try-write=" + mountRoot + "/settings/file",
						"--file=" + mountRoot + "/settings/MODE",
					},
					// root, but with a read-only root filesystem: only the
					// emptyDir is writable.
					SecurityContext: &corev1.SecurityContext{RunAsUser: new(int64(0)), ReadOnlyRootFilesystem: &yes},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "scratch", MountPath: mountRoot + "/scratch"},
						{Name: "settings", MountPath: mountRoot + "/settings", ReadOnly: true},
					},
				},
				{Name: "other", Image: "quay.io/example/other:v1", Command: []string{"/other"}},
			},
			Volumes: []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			},
		},
	}
	crashing := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crashing", Namespace: testNamespace, Labels: run},
		Spec: corev1.PodSpec{NodeName: "local", Containers: []corev1.Container{
			{Name: "missing", Image: ourImage, Command: []string{"/no-such-binary"}},
			{Name: "exits", Image: ourImage, Command: []string{"/fake-operand"}, Args: []string{"--exit=3"}, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
			{
				Name: "unhealthy", Image: ourImage, Command: []string{"/fake-operand"}, Args: []string{"--port=9443", "--ready", "--unhealthy"},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(9443)}}, PeriodSeconds: 1, FailureThreshold: 2},
			},
		}},
	}
	completes := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "completes", Namespace: testNamespace, Labels: run},
		Spec: corev1.PodSpec{NodeName: "local", RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{
			{Name: "once", Image: ourImage, Command: []string{"/fake-operand"}, Args: []string{"--exit=0"}},
		}},
	}
	// Not selected: the runner leaves it alone (kwok owns such pods).
	ignored := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ignored", Namespace: testNamespace, Labels: map[string]string{"app": "fake-operand"}},
		Spec: corev1.PodSpec{NodeName: "local", Containers: []corev1.Container{
			{Name: "ours", Image: ourImage, Command: []string{"/fake-operand"}, Args: []string{"--port=9442", "--ready"}},
		}},
	}
	for _, p := range []*corev1.Pod{operand, mixed, crashing, completes, ignored} {
		create(p, func() error {
			created, err := client.CoreV1().Pods(testNamespace).Create(ctx, p, metav1.CreateOptions{})
			if err == nil {
				p.UID = created.UID
			}
			return err
		})
	}

	var operandPID int
	var podIP string
	t.Run("not Ready until the readiness probe succeeds", func(t *testing.T) {
		c.t = t
		p := c.waitPod("operand", "main running", func(p *corev1.Pod) bool {
			return containerStatus(p, "main").State.Running != nil && containerStatus(p, "main").ContainerID != ""
		})
		operandPID = containerPID(t, containerStatus(p, "main"))
		c.waitLog("operand", "main", "readyz 503")
		// /readyz fails until /ready is requested: the pod cannot be Ready.
		p = c.pod("operand")
		cs := containerStatus(p, "main")
		if p.Status.Phase != corev1.PodRunning || cs.Ready || condition(p, corev1.PodReady) != corev1.ConditionFalse || condition(p, corev1.ContainersReady) != corev1.ConditionFalse {
			t.Fatalf("before the readiness probe succeeded: phase %s, container ready %v, Ready %s, ContainersReady %s; want Running and not ready",
				p.Status.Phase, cs.Ready, condition(p, corev1.PodReady), condition(p, corev1.ContainersReady))
		}
		if cs.Started == nil || !*cs.Started || cs.RestartCount != 0 || cs.Image != ourImage {
			t.Errorf("container status %+v, want started, image %s, no restarts", cs, ourImage)
		}
		podIP = p.Status.PodIP
		if ip, err := netip.ParseAddr(podIP); err != nil || !netip.MustParsePrefix("127.98.0.0/16").Contains(ip) || !netip.MustParsePrefix(podCIDR).Contains(ip) {
			t.Fatalf("podIP %q, want one of %s (in 127.98.0.0/16)", podIP, podCIDR)
		}
		if len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != podIP || p.Status.HostIP != "127.0.0.1" || p.Status.StartTime == nil {
			t.Errorf("podIPs %v, hostIP %q, startTime %v", p.Status.PodIPs, p.Status.HostIP, p.Status.StartTime)
		}

		// Requested through the pod IP's forwarded container port.
		poll.Eventually(t, waitTimeout, "GET /ready through the pod IP", func(context.Context) (bool, error) {
			_, err := get("http://" + net.JoinHostPort(podIP, "9440") + "/ready")
			return err == nil, err
		})
		c.waitPod("operand", "Ready", func(p *corev1.Pod) bool {
			return containerStatus(p, "main").Ready && condition(p, corev1.PodReady) == corev1.ConditionTrue && condition(p, corev1.ContainersReady) == corev1.ConditionTrue
		})
		if log := c.log("operand", "main"); strings.Index(log, "ready requested") < strings.Index(log, "readyz 503") {
			t.Errorf("log:\n%s", log)
		}
	})
	if operandPID == 0 {
		t.FailNow()
	}

	t.Run("the process: command, args, user, hostname, env, volumes", func(t *testing.T) {
		c.t = t
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", operandPID))
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		wantArgv := []string{
			"/fake-operand", "--port=9440", "--name=operand", "--escaped=$(POD_NAME)", "--undefined=$(UNDEFINED)",
			"--file=" + mountRoot + "/tls/tls.crt",
			"--file=" + mountRoot + "/serviceaccount/token",
			"--file=" + mountRoot + "/serviceaccount/ca.crt",
			"--file=" + mountRoot + "/serviceaccount/namespace",
			"--watch=" + mountRoot + "/tls/tls.crt",
			"--whoami=" + mountRoot + "/serviceaccount",
		}
		if !reflect.DeepEqual(argv, wantArgv) {
			t.Errorf("cmdline = %q, want %q", argv, wantArgv)
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", operandPID))
		if err != nil || exe != filepath.Join(binDir, "fake-operand") {
			t.Errorf("exe = %q (%v), want %s", exe, err, filepath.Join(binDir, "fake-operand"))
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", operandPID))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Uid:\t65532\t65532\t65532\t65532", "Gid:\t65532\t65532\t65532\t65532", "Groups:\t65532"} {
			if !strings.Contains(string(status), want+"\n") && !strings.Contains(string(status), want+" \n") {
				t.Errorf("/proc/%d/status lacks %q:\n%s", operandPID, want, status)
			}
		}
		// Its own network namespace.
		for _, ns := range []string{"net", "mnt", "uts"} {
			mine, _ := os.Readlink("/proc/self/ns/" + ns)
			its, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", operandPID, ns))
			if err != nil || its == mine {
				t.Errorf("%s namespace %q (%v), want one of its own (the test's is %q)", ns, its, err, mine)
			}
		}

		log := c.log("operand", "main")
		token := ""
		for l := range strings.SplitSeq(log, "\n") {
			if rest, ok := strings.CutPrefix(l, "file "+mountRoot+"/serviceaccount/token: "); ok {
				token, _ = strconv.Unquote(rest)
			}
		}
		if strings.Count(token, ".") != 2 {
			t.Errorf("the projected ServiceAccount token %q is not a JWT", token)
		}
		caLine := fmt.Sprintf("file %s/serviceaccount/ca.crt: %q", mountRoot, env.Config.CAData)
		for _, want := range []string{
			"hostname: operand",
			"uid: 65532",
			"env: POD_NAME=operand",
			"env: POD_IP=" + podIP,
			"env: GREETING=hello operand",
			"env: HOSTNAME=operand",
			"env: USER_NAME=admin",
			"env: LEVEL=2",
			"env: CM_LEVEL=2",
			"env: CM_MODE=fast",
			"env: PORT=9440",
			"env: KUBERNETES_SERVICE_HOST=127.96.0.1",
			"env: KUBERNETES_SERVICE_PORT=443",
			"env: FAKE_OPERAND_WEBHOOK_SERVICE_HOST=" + clusterIP,
			"env: FAKE_OPERAND_WEBHOOK_PORT_443_TCP_ADDR=" + clusterIP,
			fmt.Sprintf("file %s/tls/tls.crt: %q", mountRoot, "cert-v1"),
			fmt.Sprintf("file %s/serviceaccount/namespace: %q", mountRoot, testNamespace),
			caLine,
			// In the pod, the kubernetes Service leads to the API server,
			// which accepts the pod's bound token.
			"whoami: system:serviceaccount:" + testNamespace + ":fake-operand pod=operand",
			"listening on :9440",
		} {
			if !hasLine(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
		if strings.Contains(log, "env: OPTIONAL=") {
			t.Errorf("an optional variable of a missing Secret is set:\n%s", log)
		}
		// The process's environment is exactly the container's.
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", operandPID))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00") {
			if !hasLine(log, "env: "+e) {
				t.Errorf("environ has %q, which the program did not see", e)
			}
		}
		if bytes.Contains(environ, []byte("GOFLAGS=")) || bytes.Contains(environ, []byte("GOCOVERDIR")) {
			t.Errorf("the test's environment leaked into the container: %q", environ)
		}
		// On the host, the volume holds the same token.
		tok, err := os.ReadFile(filepath.Join(stateDir, string(operand.UID), "volumes", "kube-api-access", "token"))
		if err != nil || string(tok) != token {
			t.Errorf("host copy of the token: %q (%v)", tok, err)
		}
	})

	t.Run("the Service's ClusterIP leads to the pod's named target port", func(t *testing.T) {
		c.t = t
		var body string
		poll.Eventually(t, waitTimeout, "GET http://"+clusterIP+":443/hello", func(context.Context) (bool, error) {
			var err error
			body, err = get("http://" + net.JoinHostPort(clusterIP, "443") + "/hello")
			return err == nil, err
		})
		if body != "hello from operand\n" {
			t.Errorf("body %q", body)
		}
		c.waitLog("operand", "main", "hello requested")
	})

	t.Run("a host forward leads from inside the pod to the same address on the host", func(t *testing.T) {
		netns := filepath.Join(stateDir, string(operand.UID), "netns")
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return dialInNetNS(ctx, netns, addr)
		}}}
		resp, err := hc.Get("http://" + hostLn.Addr().String() + "/")
		if err != nil {
			t.Fatalf("GET %s inside the pod: %v", hostLn.Addr(), err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "from the host" {
			t.Errorf("body %q, want %q", body, "from the host")
		}
	})

	t.Run("a Secret that changes is rewritten in the running container", func(t *testing.T) {
		c.t = t
		s, err := client.CoreV1().Secrets(testNamespace).Get(ctx, "tls", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Data["tls.crt"] = []byte("cert-v2")
		if _, err := client.CoreV1().Secrets(testNamespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitLog("operand", "main", fmt.Sprintf("changed %s/tls/tls.crt: %q", mountRoot, "cert-v2"))
		if cs := containerStatus(c.pod("operand"), "main"); cs.ContainerID != fmt.Sprintf("local://%d", operandPID) || cs.RestartCount != 0 {
			t.Errorf("container %s restarted %d times, want the same process %d", cs.ContainerID, cs.RestartCount, operandPID)
		}
	})

	t.Run("a container of another image is not run", func(t *testing.T) {
		c.t = t
		p := c.waitPod("mixed", "ours running and ready, other NotRunLocally", func(p *corev1.Pod) bool {
			ours, other := containerStatus(p, "ours"), containerStatus(p, "other")
			return ours.State.Running != nil && ours.Ready && other.State.Waiting != nil && other.State.Waiting.Reason == "NotRunLocally"
		})
		other := containerStatus(p, "other")
		if other.Ready || other.ContainerID != "" || other.Image != "quay.io/example/other:v1" || !strings.Contains(other.State.Waiting.Message, "quay.io/example/other:v1") {
			t.Errorf("other: %+v", other)
		}
		if p.Status.Phase != corev1.PodRunning || condition(p, corev1.PodReady) != corev1.ConditionFalse || condition(p, corev1.ContainersReady) != corev1.ConditionFalse {
			t.Errorf("phase %s, Ready %s, ContainersReady %s; want Running, not Ready", p.Status.Phase, condition(p, corev1.PodReady), condition(p, corev1.ContainersReady))
		}
		// runAsUser and readOnlyRootFilesystem.
		log := c.waitLog("mixed", "ours", "write "+mountRoot+"/scratch/file: ok")
		for _, want := range []string{
			"uid: 0",
			"hostname: mixed",
			"write " + mountRoot + "/rootfs-write: open " + mountRoot + "/rootfs-write: read-only file system",
			"write " + mountRoot + "/settings/file: open " + mountRoot + "/settings/file: read-only file system",
			fmt.Sprintf("file %s/settings/MODE: %q", mountRoot, "fast"),
		} {
			if !hasLine(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
		if _, err := os.Stat(mountRoot + "/rootfs-write"); !os.IsNotExist(err) {
			t.Errorf("the container wrote to the host's root filesystem: %v", err)
		}
	})

	t.Run("a missing binary is a StartError, then CrashLoopBackOff", func(t *testing.T) {
		c.t = t
		p := c.waitPod("crashing", "missing restarted twice", func(p *corev1.Pod) bool {
			cs := containerStatus(p, "missing")
			last := cs.LastTerminationState.Terminated
			return cs.RestartCount >= 2 && last != nil && last.Reason == "StartError" &&
				cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
		})
		cs := containerStatus(p, "missing")
		last := cs.LastTerminationState.Terminated
		if last.ExitCode != 128 || !strings.Contains(last.Message, "/no-such-binary") || !strings.Contains(last.Message, "no such file or directory") {
			t.Errorf("last state %+v, want exit code 128 and a message naming the binary", last)
		}
		if cs.Ready || cs.ContainerID != "" {
			t.Errorf("missing: ready %v, containerID %q", cs.Ready, cs.ContainerID)
		}
		p = c.waitPod("crashing", "exits restarted", func(p *corev1.Pod) bool {
			cs := containerStatus(p, "exits")
			return cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
		})
		last = containerStatus(p, "exits").LastTerminationState.Terminated
		if last.ExitCode != 3 || last.Reason != "Error" || !strings.Contains(last.Message, "exiting with 3") || !strings.HasPrefix(last.ContainerID, "local://") {
			t.Errorf("exits: last state %+v, want exit code 3, reason Error, the log's end as message", last)
		}
		if condition(p, corev1.PodReady) != corev1.ConditionFalse {
			t.Errorf("crashing pod is Ready")
		}
	})

	t.Run("a container that fails its liveness probe is restarted", func(t *testing.T) {
		c.t = t
		p := c.waitPod("crashing", "unhealthy killed and restarted", func(p *corev1.Pod) bool {
			cs := containerStatus(p, "unhealthy")
			return cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
		})
		if last := containerStatus(p, "unhealthy").LastTerminationState.Terminated; last.ExitCode != 137 {
			t.Errorf("last state %+v, want exit code 137 (SIGKILL)", last)
		}
		// The first probe may come before the process listens; one gets an
		// answer sooner or later.
		c.waitLog("crashing", "unhealthy", "healthz 500")
	})

	t.Run("a container that completes is not restarted with OnFailure", func(t *testing.T) {
		c.t = t
		c.waitPod("completes", "completed", func(p *corev1.Pod) bool {
			st := containerStatus(p, "once").State.Terminated
			return st != nil && st.ExitCode == 0 && st.Reason == "Completed"
		})
	})

	t.Run("a killed process is restarted", func(t *testing.T) {
		c.t = t
		if err := syscall.Kill(operandPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		p := c.waitPod("operand", "main restarted", func(p *corev1.Pod) bool {
			cs := containerStatus(p, "main")
			return cs.RestartCount == 1 && cs.State.Running != nil && cs.ContainerID != fmt.Sprintf("local://%d", operandPID)
		})
		cs := containerStatus(p, "main")
		last := cs.LastTerminationState.Terminated
		if last == nil || last.ExitCode != 137 || last.ContainerID != fmt.Sprintf("local://%d", operandPID) {
			t.Fatalf("last state %+v, want terminated with exit code 137 (SIGKILL) of process %d", cs.LastTerminationState, operandPID)
		}
		newPID := containerPID(t, cs)
		if newPID == operandPID || processGone(newPID) {
			t.Fatalf("new process %d", newPID)
		}
		operandPID = newPID
		if p.Status.PodIP != podIP {
			t.Errorf("podIP changed to %s on restart", p.Status.PodIP)
		}
		// A new process is not ready until its probe succeeds again.
		poll.Eventually(t, waitTimeout, "GET /ready through the pod IP", func(context.Context) (bool, error) {
			_, err := get("http://" + net.JoinHostPort(podIP, "9440") + "/ready")
			return err == nil, err
		})
		c.waitPod("operand", "Ready again", func(p *corev1.Pod) bool {
			return containerStatus(p, "main").Ready && condition(p, corev1.PodReady) == corev1.ConditionTrue
		})
	})

	t.Run("pods not selected are left alone", func(t *testing.T) {
		c.t = t
		p := c.pod("ignored")
		if len(p.Status.ContainerStatuses) != 0 || p.Status.PodIP != "" {
			t.Errorf("status %+v, want none", p.Status)
		}
		if _, err := os.Stat(filepath.Join(logDir, "ignored")); !os.IsNotExist(err) {
			t.Errorf("logs of the ignored pod: %v", err)
		}
	})

	t.Run("a deleted pod's process gets SIGTERM and the pod goes", func(t *testing.T) {
		c.t = t
		if err := client.CoreV1().Pods(testNamespace).Delete(ctx, "operand", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, waitTimeout, "the pod to be removed", func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().Pods(testNamespace).Get(ctx, "operand", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, fmt.Errorf("get: %v", err)
		})
		log := c.log("operand", "main")
		if !hasLine(log, "signal: terminated") {
			t.Errorf("the process did not log SIGTERM:\n%s", log)
		}
		poll.Eventually(t, waitTimeout, "the process to exit", processExited(operandPID))
		sandbox := filepath.Join(stateDir, string(operand.UID))
		poll.Eventually(t, waitTimeout, "the sandbox to be removed", removed(filepath.Join(sandbox, "netns"), sandbox))
		// Nothing listens on the pod IP any more; the Service has no endpoint.
		if _, err := get("http://" + net.JoinHostPort(podIP, "9440") + "/healthz"); err == nil {
			t.Errorf("the pod IP still answers")
		}
		if _, err := get("http://" + net.JoinHostPort(clusterIP, "443") + "/hello"); err == nil {
			t.Errorf("the Service still answers")
		}
	})

	t.Run("a pod deleted for good during its grace period is killed at once", func(t *testing.T) {
		c.t = t
		stubborn := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "stubborn", Namespace: testNamespace, Labels: run},
			Spec: corev1.PodSpec{NodeName: "local", TerminationGracePeriodSeconds: new(int64(60)), Containers: []corev1.Container{
				{Name: "main", Image: ourImage, Command: []string{"/fake-operand"}, Args: []string{"--port=9444", "--ready", "--ignore-sigterm"}},
			}},
		}
		created, err := client.CoreV1().Pods(testNamespace).Create(ctx, stubborn, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := c.waitPod("stubborn", "Ready", func(p *corev1.Pod) bool { return condition(p, corev1.PodReady) == corev1.ConditionTrue })
		stubbornPID := containerPID(t, containerStatus(p, "main"))
		c.waitLog("stubborn", "main", "listening on :9444")
		if err := client.CoreV1().Pods(testNamespace).Delete(ctx, "stubborn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitLog("stubborn", "main", "signal: terminated")
		if processGone(stubbornPID) {
			t.Fatal("the process ignoring SIGTERM is gone before its grace period ended")
		}
		// kubectl delete --force --grace-period=0
		if err := client.CoreV1().Pods(testNamespace).Delete(ctx, "stubborn", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		poll.Eventually(t, waitTimeout, "the process to be killed", processExited(stubbornPID))
		poll.Eventually(t, waitTimeout, "the sandbox to be removed", removed(filepath.Join(stateDir, string(created.UID))))
	})

	t.Run("stopping the runner stops the processes and keeps the pods", func(t *testing.T) {
		c.t = t
		var pids []int
		for _, name := range []string{"mixed", "crashing"} {
			for _, cs := range c.pod(name).Status.ContainerStatuses {
				if cs.State.Running != nil {
					pids = append(pids, containerPID(t, cs))
				}
			}
		}
		if len(pids) == 0 {
			t.Fatal("no running process to stop")
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for _, p := range pids {
			if !processGone(p) {
				t.Errorf("process %d still runs", p)
			}
		}
		left, _ := os.ReadDir(stateDir)
		if len(left) != 0 {
			t.Errorf("state dir holds %v", left)
		}
		pods, err := client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 4 {
			t.Errorf("pods after stopping: %v (%v), want mixed, crashing, completes and ignored", len(pods.Items), err)
		}
	})
	t.Logf("TestRunner took %s", time.Since(began).Round(time.Millisecond))
}
