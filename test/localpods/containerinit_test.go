package localpods

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// spawnCommand makes the test binary play a runner that starts one
// container (as container.start does) and then waits to be killed.
const spawnCommand = "spawn-container"

func spawn(specFile string) {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command(self, ContainerInitCommand, specFile)
	cmd.Env = []string{}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	_ = cmd.Wait()
	os.Exit(0)
}

// TestContainerDiesWithRunner: a container's process is killed when the
// runner that started it dies, although it runs as another user (changing
// the user clears the parent-death signal).
func TestContainerDiesWithRunner(t *testing.T) {
	requireRoot(t)
	_, _, state, _ := testDirs(t)
	netns := filepath.Join(state, "netns")
	if err := newNetNS(netns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeNetNS(netns) })
	// The binary sits where the container's user cannot walk to it (a
	// checkout in a 0700 directory): the container runs it all the same.
	sleep := privateCopy(t, state, "sleep")
	spec := containerSpec{NetNS: netns, Hostname: "orphan", UID: 65532, GID: 65532, Path: sleep, Argv: []string{"sleep", "60"}}
	data, _ := json.Marshal(spec)
	specFile := filepath.Join(state, "spec.json")
	if err := os.WriteFile(specFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runner := exec.Command(self, spawnCommand, specFile)
	runner.Stderr = os.Stderr
	out, err := runner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = runner.Process.Kill(); _ = runner.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the container's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("pid %q", line)
	}
	t.Cleanup(func() {
		if !processGone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	poll.Eventually(t, waitTimeout, "the container to run sleep as 65532", func(context.Context) (bool, error) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if exe == sleep && strings.Contains(string(status), "Uid:\t65532\t") {
			return true, nil
		}
		return false, fmt.Errorf("exe %q, status:\n%s", exe, status)
	})
	if err := runner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	poll.Eventually(t, 5*time.Second, "the container's process to end with its runner", processExited(pid))
}

// privateCopy copies the named system binary into a directory only root
// can enter, below dir, and returns the copy's path.
func privateCopy(t *testing.T, dir, name string) string {
	t.Helper()
	src, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s binary", name)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(private, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
