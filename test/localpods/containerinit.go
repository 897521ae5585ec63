package localpods

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// ContainerInitCommand is the first argument with which the Runner re-executes
// its own binary to set up a container's namespaces before it executes the
// container's binary; the binary's main must hand it to ContainerInit.
const ContainerInitCommand = "container-init"

// containerSpec is what the Runner hands to ContainerInit (as a JSON file).
type containerSpec struct {
	// NetNS is the pinned network namespace of the pod.
	NetNS string
	// Hostname is the pod's name.
	Hostname string
	// Mounts are bind mounts, applied in order.
	Mounts []bindMount
	// ReadOnlyRoot makes "/" read-only (readOnlyRootFilesystem).
	ReadOnlyRoot bool
	UID, GID     int
	Dir          string
	// Path is the binary to execute; Argv[0] is the container's command.
	Path string
	Argv []string
	Env  []string
}

type bindMount struct {
	Source, Target string
	ReadOnly       bool
}

// ContainerInit runs in a child the Runner started in a new mount and UTS
// namespace: it mounts the container's volumes, joins the pod's network
// namespace, drops to the container's user and executes the container's
// binary. It returns only on failure.
func ContainerInit(specFile string) error {
	// Setns and exec must happen on the same thread: the executed program
	// keeps that thread's network namespace.
	runtime.LockOSThread()
	parent := os.Getppid()
	data, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var spec containerSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("decoding %s: %w", specFile, err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	// Mount points are created, and the volumes mounted, before "/" turns
	// read-only: a bind mount copies its source mount's flags, and the
	// volumes' sources (under the state directory) are usually on the root
	// filesystem, so a volume mounted after would be read-only too.
	for _, m := range spec.Mounts {
		if err := mountPoint(m); err != nil {
			return err
		}
	}
	for _, m := range spec.Mounts {
		if err := unix.Mount(m.Source, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mounting %s at %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("making %s read-only: %w", m.Target, err)
			}
		}
	}
	if spec.ReadOnlyRoot {
		// Only the root mount: the volumes mounted on it stay writable.
		if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("making / read-only: %w", err)
		}
	}
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return fmt.Errorf("setting the hostname: %w", err)
	}
	ns, err := unix.Open(spec.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("joining the pod's network namespace: %w", err)
	}
	unix.Close(ns)
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return fmt.Errorf("changing to the working directory: %w", err)
		}
	}
	// The binary is opened while still root and executed through its file
	// descriptor: the container's user may be unable to reach it by path
	// (a checkout under a 0700 directory, as mktemp makes), while an image's
	// binaries are always reachable. Only the file's own mode still counts.
	bin, err := unix.Open(spec.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the container's binary: %w", err)
	}
	if err := syscall.Setgroups([]int{spec.GID}); err != nil {
		return err
	}
	if err := syscall.Setgid(spec.GID); err != nil {
		return err
	}
	if err := syscall.Setuid(spec.UID); err != nil {
		return err
	}
	// Changing the user cleared the parent-death signal the Runner set
	// (Pdeathsig): set it again, so that the container dies with the
	// Runner, and give up if the Runner is already gone.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return fmt.Errorf("the runner exited")
	}
	// A /proc fd link leads to the file without walking its directories;
	// the kernel opens it before close-on-exec closes the descriptor.
	if err := syscall.Exec(fmt.Sprintf("/proc/self/fd/%d", bin), spec.Argv, spec.Env); err != nil {
		return fmt.Errorf("executing %s as uid %d: %w", spec.Path, spec.UID, err)
	}
	return nil
}

// mountPoint creates the file or directory a bind mount needs at its target.
func mountPoint(m bindMount) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.MkdirAll(m.Target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(m.Target); os.IsNotExist(err) {
		f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	return nil
}
