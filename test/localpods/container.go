package localpods

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
)

// container supervises the process of one container of a pod.
type container struct {
	spec    corev1.Container
	sandbox *sandbox
	// notRun says why the container is not run (another image); empty for
	// containers that run.
	notRun string
	// changed is called whenever the status changes.
	changed func()

	mu          sync.Mutex
	status      corev1.ContainerStatus
	cmd         *exec.Cmd
	startedOnce bool
	stopping    bool
	done        chan struct{}
}

func newContainer(s *sandbox, spec corev1.Container, notRun string, restarts int32, changed func()) *container {
	c := &container{spec: spec, sandbox: s, notRun: notRun, changed: changed, done: make(chan struct{})}
	c.status = corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, RestartCount: restarts}
	if notRun != "" {
		c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "NotRunLocally", Message: notRun}
	} else {
		c.status.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	return c
}

func (c *container) snapshot() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.status.DeepCopy()
}

func (c *container) update(fn func(s *corev1.ContainerStatus)) {
	c.mu.Lock()
	fn(&c.status)
	c.mu.Unlock()
	c.changed()
}

// run supervises the container until ctx ends: start, wait, back off,
// restart (restartPolicy Always and OnFailure).
func (c *container) run(ctx context.Context, r *Runner) {
	defer close(c.done)
	if c.notRun != "" {
		return
	}
	backoff := r.opts.BackoffInitial
	for {
		started := time.Now()
		exit, err := c.runOnce(ctx, r)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			klog.InfoS("container did not start", "pod", c.sandbox.key, "container", c.spec.Name, "err", err)
		}
		pod := c.sandbox.currentPod()
		policy := pod.Spec.RestartPolicy
		if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && exit == 0 && err == nil) {
			return
		}
		if time.Since(started) > 2*r.opts.BackoffMax {
			backoff = r.opts.BackoffInitial
		}
		c.update(func(s *corev1.ContainerStatus) {
			s.LastTerminationState = s.State
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, c.spec.Name, pod.Name),
			}}
			s.Ready = false
			s.Started = new(false)
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, r.opts.BackoffMax)
		c.update(func(s *corev1.ContainerStatus) { s.RestartCount++ })
	}
}

// runOnce starts the process and waits for it to exit. A start failure is
// reported like a kubelet does: terminated, reason StartError, exit code 128.
func (c *container) runOnce(ctx context.Context, r *Runner) (int, error) {
	cmd, logStart, err := c.start(r)
	if err != nil {
		now := metav1.Now()
		c.update(func(s *corev1.ContainerStatus) {
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: now, FinishedAt: now,
			}}
			s.Ready = false
		})
		return 128, err
	}
	now := metav1.Now()
	c.update(func(s *corev1.ContainerStatus) {
		s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		s.ContainerID = "local://" + strconv.Itoa(cmd.Process.Pid)
		s.Ready = false
		s.Started = new(true)
	})
	probeCtx, stopProbes := context.WithCancel(ctx)
	go c.probe(probeCtx, cmd)
	waitErr := cmd.Wait()
	stopProbes()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	msg := ""
	if code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = tailLog(c.logPath(r), logStart)
	}
	finished := metav1.Now()
	c.update(func(s *corev1.ContainerStatus) {
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), Reason: reason, Message: msg, StartedAt: now, FinishedAt: finished,
			ContainerID: s.ContainerID,
		}}
		s.Ready = false
	})
	klog.InfoS("container exited", "pod", c.sandbox.key, "container", c.spec.Name, "exitCode", code, "err", waitErr)
	return code, nil
}

func (c *container) logPath(r *Runner) string {
	return filepath.Join(r.opts.LogDir, c.sandbox.currentPod().Name, c.spec.Name+".log")
}

// start resolves the container's binary, command, args and env and starts
// it through ContainerInit in its own mount and UTS namespaces.
func (c *container) start(r *Runner) (*exec.Cmd, int64, error) {
	pod := c.sandbox.currentPod()
	env, vars, err := containerEnv(pod, &c.spec, r.serviceEnv(pod), r.look)
	if err != nil {
		return nil, 0, fmt.Errorf("CreateContainerConfigError: %w", err)
	}
	argv := append([]string{}, c.spec.Command...)
	if len(argv) == 0 {
		// The image's entrypoint (Dockerfile ENTRYPOINT).
		argv = []string{"/machine-api-operator"}
	}
	argv = append(argv, c.spec.Args...)
	for i := range argv {
		argv[i] = expand(argv[i], vars)
	}
	bin := filepath.Join(r.opts.BinDir, filepath.Base(argv[0]))
	if !strings.HasPrefix(argv[0], "/") || filepath.Dir(argv[0]) != "/" {
		return nil, 0, fmt.Errorf("exec: %q: this project's image has its binaries in /, not at this path", argv[0])
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, 0, fmt.Errorf("exec: %q: stat %s: no such file or directory (no %s)", argv[0], argv[0], bin)
	}
	spec := containerSpec{
		NetNS:    c.sandbox.netnsPath(),
		Hostname: pod.Name,
		UID:      r.opts.DefaultUID, GID: r.opts.DefaultUID,
		Dir:  c.spec.WorkingDir,
		Path: bin, Argv: argv, Env: env,
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			spec.UID = int(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			spec.GID = int(*sc.RunAsGroup)
		}
	}
	if sc := c.spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			spec.UID = int(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			spec.GID = int(*sc.RunAsGroup)
		}
		spec.ReadOnlyRoot = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	}
	for _, m := range c.spec.VolumeMounts {
		src, ok := c.sandbox.volumes[m.Name]
		if !ok {
			return nil, 0, fmt.Errorf("volume mount %q: no volume of that name", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
		}
		spec.Mounts = append(spec.Mounts, bindMount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	dir := filepath.Join(c.sandbox.dir, "containers", c.spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	specFile := filepath.Join(dir, "spec.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specFile, data, 0o600); err != nil {
		return nil, 0, err
	}
	logPath := c.logPath(r)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, 0, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = logFile.Close() }() // the container writes through its own descriptor
	// Each run starts with a marker line, so a log holding several runs can
	// be split (the chaos suite checks each run's leader election).
	if _, err := fmt.Fprintf(logFile, "=== container started %s\n", time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return nil, 0, err
	}
	st, _ := logFile.Stat()
	cmd := exec.Command(r.opts.SelfExe, ContainerInitCommand, specFile)
	cmd.Env = []string{}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, 0, errors.New("pod is stopping")
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	c.cmd = cmd
	c.startedOnce = true
	_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	return cmd, st.Size(), nil
}

// stop sends SIGTERM to the container's processes, then SIGKILL after
// grace, and waits for the supervisor to end.
func (c *container) stop(grace time.Duration) {
	c.mu.Lock()
	c.stopping = true
	cmd := c.cmd
	c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.done:
			return
		case <-time.After(grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	<-c.done
}

// probe runs the container's startup, readiness and liveness probes while
// the process runs. Until a probe first succeeds it is tried every second
// (at most every periodSeconds), so a local pod turns Ready as soon as it
// can; then every periodSeconds.
func (c *container) probe(ctx context.Context, cmd *exec.Cmd) {
	if p := c.spec.StartupProbe; p != nil {
		if !c.probeUntil(ctx, p, true) {
			return
		}
	}
	if c.spec.LivenessProbe != nil {
		go c.liveness(ctx, cmd, c.spec.LivenessProbe)
	}
	p := c.spec.ReadinessProbe
	if p == nil {
		c.update(func(s *corev1.ContainerStatus) { s.Ready = true })
		return
	}
	wait(ctx, time.Duration(p.InitialDelaySeconds)*time.Second)
	ready, succ, fail := false, int32(0), int32(0)
	for ctx.Err() == nil {
		err := c.check(ctx, p)
		if err == nil {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
		}
		switch {
		case !ready && succ >= max(p.SuccessThreshold, 1):
			ready = true
			c.update(func(s *corev1.ContainerStatus) { s.Ready = true })
		case ready && fail >= max(p.FailureThreshold, 1):
			ready = false
			klog.InfoS("readiness probe failed", "pod", c.sandbox.key, "container", c.spec.Name, "err", err)
			c.update(func(s *corev1.ContainerStatus) { s.Ready = false })
		}
		interval := period(p)
		if !ready {
			interval = min(interval, time.Second)
		}
		wait(ctx, interval)
	}
}

func (c *container) probeUntil(ctx context.Context, p *corev1.Probe, fast bool) bool {
	wait(ctx, time.Duration(p.InitialDelaySeconds)*time.Second)
	for ctx.Err() == nil {
		if c.check(ctx, p) == nil {
			return true
		}
		interval := period(p)
		if fast {
			interval = min(interval, time.Second)
		}
		wait(ctx, interval)
	}
	return false
}

// liveness kills the process after failureThreshold failed probes; the
// supervisor then restarts it.
func (c *container) liveness(ctx context.Context, cmd *exec.Cmd, p *corev1.Probe) {
	wait(ctx, time.Duration(p.InitialDelaySeconds)*time.Second)
	fail := int32(0)
	for ctx.Err() == nil {
		if err := c.check(ctx, p); err != nil {
			fail++
			if fail >= max(p.FailureThreshold, 1) {
				klog.InfoS("liveness probe failed; restarting the container", "pod", c.sandbox.key, "container", c.spec.Name, "err", err)
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				return
			}
		} else {
			fail = 0
		}
		wait(ctx, period(p))
	}
}

func period(p *corev1.Probe) time.Duration {
	if p.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(p.PeriodSeconds) * time.Second
}

func wait(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// check runs one probe against the pod's IP inside its network namespace.
func (c *container) check(ctx context.Context, p *corev1.Probe) error {
	timeout := time.Second
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := c.port(g.Port)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = c.sandbox.ip
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		client := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialInNetNS(ctx, c.sandbox.netnsPath(), addr)
			},
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet does not verify probe certificates either
			DisableKeepAlives: true,
		}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+g.Path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := c.port(p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := dialInNetNS(ctx, c.sandbox.netnsPath(), net.JoinHostPort(c.sandbox.ip, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	default:
		return errors.New("only httpGet and tcpSocket probes are supported by the local pod runner")
	}
}

// port resolves a probe's port: a number or the name of a container port.
func (c *container) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.spec.Name, p.StrVal)
}

// tailLog returns the last 80 lines (at most 2 KiB) a run wrote after
// offset: the termination message of FallbackToLogsOnError.
func tailLog(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only: nothing to flush
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	start := max(offset, st.Size()-2048)
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	return strings.Join(lines, "\n")
}
