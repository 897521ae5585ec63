package controllertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere"
	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

const (
	// apiTimeout is the provider's per-request vCenter timeout here (30 s
	// by default).
	apiTimeout = time.Second
	// pauseFor is how long vCenter stays unresponsive. It exceeds
	// apiTimeout, which is the point: the calls in flight and those made
	// during the pause give up, the provider loses answers (a clone or a
	// power-off vCenter did but whose task it never recorded), and must
	// find its way back once vCenter answers again.
	pauseFor = 3 * apiTimeout
	// reconcileBound bounds one Reconcile while vCenter is paused: at most
	// one call started before the pause and up to two timed-out calls. A
	// hung call would block a worker until the test's timeout; calls queued
	// behind each other (one timeout per Reconcile waiting before them) or a
	// session check followed by a logout and a new login, each timing out,
	// exceed it.
	reconcileBound = 3 * apiTimeout
	// taskCallDelay is how long vcsim takes to answer a call that starts a
	// clone, power-off or destroy (vCenter takes a while too).
	taskCallDelay = 300 * time.Millisecond
)

// slowTaskCalls makes vcsim take about taskCallDelay, varying from call to
// call, before it starts a clone, power-off or destroy task and answers:
// when the first such task appears and vCenter is paused, the same calls of
// the other Machines, made at about the same time, are likely still under
// way, and their answers are lost.
//
// And it gives each Machine a datastore of its own (LocalDS_1 to LocalDS_3), none of them the template's
// (LocalDS_0): vcsim's destroy updates the free space of the datastore under a disk while another VM's
// destroy copies that datastore's whole object unlocked to resolve its own directories (a data race in vcsim,
// not in the provider, that -race reports when two destroys meet on one datastore). A clone also keeps the
// template's datastore in its list, so the template's cannot be one of them.
func slowTaskCalls(m *simulator.Model) {
	m.Datastore = 4
	ms := int(taskCallDelay / time.Millisecond)
	m.DelayConfig.MethodDelay = map[string]int{"CloneVM_Task": ms, "PowerOffVM_Task": ms, "Destroy_Task": ms}
	m.DelayConfig.DelayJitter = 0.5 // standard deviation / mean
}

// While three Machines are being cloned, and again while they are being
// deleted, vCenter stops answering (as under SIGSTOP) for longer than the
// provider's API timeout: every Reconcile returns within a bound with a
// timeout, and once vCenter is back each Machine gets exactly one VM and
// reaches Provisioned, then, deleted, leaves no VM behind.
func TestVCenterPauseLosesAndDuplicatesNothing(t *testing.T) {
	f := newFixture(t, slowTaskCalls, func(o *vsphere.Options) { o.APITimeout = apiTimeout })
	before := folderVMs(t, f.vc)
	names := []string{"worker-p0", "worker-p1", "worker-p2"}
	var ms []*machinev1beta1.Machine
	for i, n := range names {
		ms = append(ms, f.machine(t, n, vspheretest.Template, fmt.Sprintf("LocalDS_%d", i+1)))
	}

	f.acrossPause(t, ms, "the first clone task", "VirtualMachine.clone")
	f.reconcileAllUntil(t, ms, "a powered-on VM for each Machine", notFailed, func() error {
		for _, n := range names {
			if got := f.vc.VMsNamed(n); got != 1 {
				return fmt.Errorf("%d VMs named %s", got, n)
			}
			if p := f.vc.Props(f.vc.VM(n), "runtime.powerState").Runtime.PowerState; p != types.VirtualMachinePowerStatePoweredOn {
				return fmt.Errorf("VM %s is %s", n, p)
			}
		}
		return nil
	})
	for i, n := range names {
		f.vc.SetGuestIP(n, fmt.Sprintf("10.1.0.%d", 10+i))
	}
	f.reconcileAllUntil(t, ms, "each Machine Provisioned with its guest IP", func(got *machinev1beta1.Machine) error {
		ip := fmt.Sprintf("10.1.0.%d", 10+slices.Index(names, got.Name))
		if phase(got) != machinev1beta1.PhaseProvisioned || !slices.Contains(got.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip}) {
			return fmt.Errorf("%s: phase %q, addresses %v", got.Name, phase(got), got.Status.Addresses)
		}
		return nil
	}, nil)
	for _, m := range ms {
		if n := f.vc.VMsNamed(m.Name); n != 1 {
			t.Errorf("%d VMs named %s, want 1", n, m.Name)
		}
		if uuid := f.vc.Props(f.vc.VM(m.Name), "config.instanceUuid").Config.InstanceUuid; uuid != string(m.UID) {
			t.Errorf("VM %s has instance UUID %s, want the Machine's UID %s", m.Name, uuid, m.UID)
		}
	}
	if got, want := folderVMs(t, f.vc), sorted(append(slices.Clone(before), names...)); !slices.Equal(got, want) {
		t.Fatalf("VMs in %s after create: %v, want %v (one per Machine, nothing else)", vspheretest.Folder, got, want)
	}

	for _, m := range ms {
		if err := env.Client.Delete(f.ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	f.acrossPause(t, ms, "the first power-off or destroy", "VirtualMachine.powerOff", "VirtualMachine.destroy")
	f.reconcileAllUntil(t, ms, "every Machine gone", nil, nil)
	for _, n := range names {
		if got := f.vc.VMsNamed(n); got != 0 {
			t.Errorf("%d VMs named %s left, want 0", got, n)
		}
	}
	if got := folderVMs(t, f.vc); !slices.Equal(got, before) {
		t.Errorf("VMs in %s after delete: %v, want %v as before the test", vspheretest.Folder, got, before)
	}
}

// acrossPause reconciles the Machines, all at once as the controller's
// workers would, until a vCenter task named by one of taskIDs starts;
// pauses vCenter right then, while calls are in flight; keeps reconciling
// for pauseFor, each Reconcile returning within reconcileBound with a
// timeout or no error; and resumes.
func (f *fixture) acrossPause(t *testing.T, ms []*machinev1beta1.Machine, what string, taskIDs ...string) {
	t.Helper()
	paused := f.pauseAtTask(t, taskIDs)
	var pausedAt time.Time
	var during []outcome // the round the pause caught, then those while paused
	poll.Eventually(t, 30*time.Second, what+" (then vCenter is paused)", poll.Check(func() error {
		during = f.reconcileAll(ms)
		select {
		case pausedAt = <-paused:
			return nil
		default:
			return errors.New("no such task yet")
		}
	}))
	t.Cleanup(f.vc.Resume) // a failed test must not leave the provider's calls held
	rounds := 1
	for ; time.Since(pausedAt) < pauseFor; rounds++ {
		during = append(during, f.reconcileAll(ms)...)
	}
	f.vc.Resume()
	var failed, caught int
	var longest time.Duration
	for i, o := range during {
		if i < len(ms) && o.err != nil {
			caught++ // a Reconcile under way when vCenter stopped answering
		}
		longest = max(longest, o.took)
		if o.took > reconcileBound {
			t.Errorf("Reconcile of %s took %s while vCenter was paused, want under %s (a call that does not time out)", o.name, o.took.Round(time.Millisecond), reconcileBound)
		}
		if o.err == nil {
			continue
		}
		failed++
		if !isTimeout(o.err) {
			t.Errorf("Reconcile of %s while vCenter was paused: %v; want a timeout", o.name, o.err)
		}
	}
	t.Logf("%s: vCenter paused for %s, %d reconcile rounds, %d of %d Reconciles timed out (%d caught under way), the longest took %s",
		what, time.Since(pausedAt).Round(time.Millisecond), rounds, failed, len(during), caught, longest.Round(time.Millisecond))
	if failed == 0 {
		t.Fatal("no Reconcile failed while vCenter was paused: the pause caught no call, the test proves nothing")
	}
}

// pauseAtTask pauses vCenter as soon as the inspection client sees a new
// task whose descriptionId starts with one of ids (vcsim's clone is
// "VirtualMachine.cloneVm", vCenter's "VirtualMachine.clone"), and then
// sends the time on the channel. The tasks vCenter knows already do not count.
func (f *fixture) pauseAtTask(t *testing.T, ids []string) <-chan time.Time {
	t.Helper()
	c := f.vc.Client
	tm := *c.ServiceContent.TaskManager
	var known mo.TaskManager
	if err := c.RetrieveOne(f.ctx, tm, []string{"recentTask"}, &known); err != nil {
		t.Fatal(err)
	}
	seen := map[types.ManagedObjectReference]bool{}
	for _, r := range known.RecentTask {
		seen[r] = true
	}
	paused := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		err := property.Wait(ctx, property.DefaultCollector(c.Client), tm, []string{"recentTask"}, func(changes []types.PropertyChange) bool {
			for _, ch := range changes {
				refs, _ := ch.Val.(types.ArrayOfManagedObjectReference)
				for _, r := range refs.ManagedObjectReference {
					if seen[r] {
						continue
					}
					seen[r] = true
					var task mo.Task
					if err := c.RetrieveOne(ctx, r, []string{"info.descriptionId"}, &task); err != nil {
						continue // expired already
					}
					if slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(task.Info.DescriptionId, id) }) {
						f.vc.Pause()
						paused <- time.Now()
						return true
					}
				}
			}
			return false
		})
		if err != nil && ctx.Err() == nil {
			t.Errorf("watching vCenter's tasks: %v", err)
		}
	}()
	return paused
}

// outcome is one Reconcile's result.
type outcome struct {
	name string
	took time.Duration
	err  error
}

// reconcileAll reconciles every Machine concurrently.
func (f *fixture) reconcileAll(ms []*machinev1beta1.Machine) []outcome {
	out := make([]outcome, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := f.r.Reconcile(f.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			out[i] = outcome{name: m.Name, took: time.Since(start), err: err}
		}()
	}
	wg.Wait()
	return out
}

// reconcileAllUntil reconciles the Machines until each stored one satisfies
// each (nil: until all are gone) and then inVCenter (when given) holds.
func (f *fixture) reconcileAllUntil(t *testing.T, ms []*machinev1beta1.Machine, what string, each func(*machinev1beta1.Machine) error, inVCenter func() error) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, what, poll.Check(func() error {
		var errs []error
		for _, o := range f.reconcileAll(ms) {
			if o.err != nil {
				errs = append(errs, fmt.Errorf("reconcile %s: %w", o.name, o.err))
			}
		}
		for _, m := range ms {
			got := &machinev1beta1.Machine{}
			err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(m), got)
			switch {
			case apierrors.IsNotFound(err) && each == nil:
			case err != nil:
				return errors.Join(append(errs, err)...)
			case each == nil:
				return errors.Join(append(errs, fmt.Errorf("%s still there, phase %q", m.Name, phase(got)))...)
			default:
				if err := each(got); err != nil {
					return errors.Join(append(errs, err)...)
				}
			}
		}
		if inVCenter != nil {
			return inVCenter()
		}
		return nil
	}))
}

// notFailed rejects a Machine the pause made Failed: a timeout is not the
// user's to fix.
func notFailed(m *machinev1beta1.Machine) error {
	if phase(m) == machinev1beta1.PhaseFailed {
		return fmt.Errorf("%s is Failed: %s", m.Name, ptr.Deref(m.Status.ErrorMessage, ""))
	}
	return nil
}

// folderVMs lists the names of the VMs in the workspace folder, sorted.
func folderVMs(t *testing.T, vc *vspheretest.VCenter) []string {
	t.Helper()
	vms, err := vc.Finder.VirtualMachineList(t.Context(), vspheretest.Folder+"/*")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, vm := range vms {
		names = append(names, vm.Name())
	}
	return sorted(names)
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// isTimeout reports an error from a vCenter call that gave up waiting.
func isTimeout(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout exceeded")
}
