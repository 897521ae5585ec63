package vsphere

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/openshift/api/features"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// Defaults of Options.
const (
	DefaultPollInterval = 10 * time.Second
	DefaultAPITimeout   = 30 * time.Second
)

// userDataSecretKey is the key of the ignition config in the userDataSecret.
const userDataSecretKey = "userData"

// Options configure an Actuator.
type Options struct {
	// Client reads Secrets, Nodes, the Infrastructure and ConfigMaps, and patches the Machine's
	// instance-state annotation and region/zone labels.
	Client client.Client
	// Settings gives each vCenter's port, TLS and failure domains; nil reads them from the cluster.
	Settings SettingsSource
	// PollInterval is the wait before looking at a running vCenter task again; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// APITimeout bounds each vCenter request; 0 means DefaultAPITimeout.
	APITimeout time.Duration
	// Clock (optional) tells the time; nil is the real clock.
	Clock clock.PassiveClock
	// VMGroupZonal is OpenShift's VSphereHostVMGroupZonal feature gate (workspace.vmGroup is refused without).
	VMGroupZonal bool
}

// Actuator is the vSphere provider (provider.Actuator).
type Actuator struct {
	client       client.Client
	settings     SettingsSource
	poll         time.Duration
	timeout      time.Duration
	clock        clock.PassiveClock
	sessions     *sessions
	vmGroupZonal bool
	// groupEdits serialises VM group edits; lastGroupEdit, guarded by it, must have finished before the next
	// edit reads the group (the cluster's recentTask alone did not always show it running).
	groupEdits    sync.Mutex
	lastGroupEdit groupEdit
	// orphans is the folder of each instance of the last ListInstances, by providerID, for DeleteInstance.
	orphans struct {
		sync.Mutex
		listed map[string]clusterFolder
	}
}

var (
	_ provider.Actuator   = &Actuator{}
	_ provider.SpecServer = &Actuator{}
)

// NewActuator returns a vSphere Actuator.
func NewActuator(opts Options) *Actuator {
	a := &Actuator{client: opts.Client, settings: cmp.Or[SettingsSource](opts.Settings, ClusterSettings{Reader: opts.Client}),
		poll: cmp.Or(max(opts.PollInterval, 0), DefaultPollInterval), timeout: cmp.Or(max(opts.APITimeout, 0), DefaultAPITimeout),
		clock: cmp.Or[clock.PassiveClock](opts.Clock, clock.RealClock{}), vmGroupZonal: opts.VMGroupZonal}
	a.sessions = &sessions{byKey: map[sessionKey]*cachedSession{}, timeout: a.timeout, metrics: &requestMetrics{vec: newRequestHistogram()}}
	return a
}

func (a *Actuator) now() time.Time { return a.clock.Now() }

// ProviderSpecKinds implements provider.SpecServer; the kind is named, as the group is shared with
// OpenShift's other providers.
func (a *Actuator) ProviderSpecKinds() []schema.GroupKind {
	return []schema.GroupKind{{Group: machinev1beta1.GroupName, Kind: providerSpecKind}}
}

// Close logs out of every vCenter session.
func (a *Actuator) Close(ctx context.Context) { a.sessions.close(ctx) }

// target is one call's view of a Machine: its spec, status, session and settings; openVM adds its task and VM.
type target struct {
	creds    credentials
	spec     *machinev1beta1.VSphereMachineProviderSpec
	status   *machinev1beta1.VSphereMachineProviderStatus
	session  *session
	settings Settings
	task     taskState
	info     *types.TaskInfo
	vm       *machineVM
}

// open decodes the Machine and connects to its vCenter.
func (a *Actuator) open(ctx context.Context, m *machinev1beta1.Machine) (*target, error) {
	spec, err := decodeSpec(m)
	if err != nil {
		return nil, err
	}
	settings, err := a.settings.Settings(ctx, spec.Workspace.Server)
	if err != nil {
		return nil, err
	}
	creds, err := readCredentials(ctx, a.client, m.Namespace, spec)
	if err != nil {
		return nil, err
	}
	key := sessionKey{server: spec.Workspace.Server, port: settings.Port, username: creds.username, datacenter: spec.Workspace.Datacenter, insecure: settings.Insecure}
	s, err := a.sessions.get(ctx, key, creds.password)
	if err != nil {
		return nil, err
	}
	return &target{creds: creds, spec: spec, status: decodeStatus(m), session: s, settings: settings}, nil
}

// openVM opens the Machine, reads its providerStatus task and finds its VM (nil: none); when idle is asked
// for, a running task is a RequeueAfterError.
func (a *Actuator) openVM(ctx context.Context, m *machinev1beta1.Machine, idle bool) (*target, error) {
	t, err := a.open(ctx, m)
	if err != nil {
		return nil, err
	}
	if t.task, t.info, err = readTask(ctx, t.session, t.status.TaskRef); err != nil {
		return nil, err
	}
	if idle && t.task == taskRunning {
		return nil, provider.RequeueAfter(a.poll, fmt.Sprintf("vCenter task %s (%s) is running", t.status.TaskRef, t.info.DescriptionId))
	}
	t.vm, err = findMachineVM(ctx, t.session, m, t.spec.Workspace.Folder)
	return t, err
}

// Create clones the Machine's VM and powers it on, one step per call: each step starts a vCenter task,
// records it in providerStatus.taskRef and asks to be called again.
func (a *Actuator) Create(ctx context.Context, m *machinev1beta1.Machine) error {
	if m.Labels[machinev1beta1.MachineClusterIDLabel] == "" {
		return provider.InvalidConfiguration("%s: missing %q label", m.Name, machinev1beta1.MachineClusterIDLabel)
	}
	spec, err := decodeSpec(m)
	if err != nil {
		return err
	}
	// OpenShift's message; a plain error, so turning the gate on later lets Create go on.
	if spec.Workspace.VMGroup != "" && !a.vmGroupZonal {
		return fmt.Errorf("%v: vmGroup is only available with the %s feature gate", m.Name, features.FeatureGateVSphereHostVMGroupZonal)
	}
	t, err := a.openVM(ctx, m, true)
	if err != nil {
		return err
	}
	st, s, vm, task := t.status, t.session, t.vm, t.task
	if t.info != nil {
		task = ignoreFailedClone(task, t.info.DescriptionId, vm.state(m))
	}
	state, cluster, err := observeGroup(ctx, s, t.spec, vm, vm.state(m))
	if err != nil {
		return err
	}
	step := decideCreate(task, state)
	var userData []byte
	var kargs string
	if step == createClone || step == createConfigure { // the steps that write the ignition and network config
		if userData, err = a.userData(ctx, m, t.spec); err != nil {
			return err
		}
		if kargs, err = a.staticNetwork(ctx, m, t.spec, st); err != nil { // waits for the IP address claims
			return writeStatus(m, st, err)
		}
	}
	started := func(ref, doing, requeue string, kv ...any) error {
		log.FromContext(ctx).Info(doing, append(kv, "task", ref)...)
		st.TaskRef = ref
		return writeStatus(m, st, provider.RequeueAfter(a.poll, requeue))
	}
	switch step {
	case createReportTask:
		err := taskError(t.info)
		st.TaskRef = "" // the next call starts over
		setCreation(st, a.now(), err)
		return writeStatus(m, st, err)
	case createClone:
		ref, err := startClone(ctx, s, m, t.spec, userData, kargs)
		if err != nil {
			setCreation(st, a.now(), err)
			return writeStatus(m, st, err)
		}
		setCreation(st, a.now(), nil)
		return started(ref, "cloning the VM", "cloning the VM from template "+t.spec.Template, "template", t.spec.Template)
	case createAdopt:
		log.FromContext(ctx).Info("adopting the VM of the Machine's name; it is reported on, never changed", "vm", vm.mo.Name, "powerState", vm.mo.Runtime.PowerState)
		a.observe(st, vm)
		setCreation(st, a.now(), nil)
		return writeStatus(m, st, nil)
	case createConflict:
		err := conflictError(m, t.spec.Workspace.Folder, vm)
		setCondition(st, a.now(), metav1.ConditionFalse, ReasonVMNameConflict, err.Error())
		return writeStatus(m, st, err)
	case createConfigure:
		task, err := vm.obj.Reconfigure(ctx, vmConfig(m, t.spec, userData, kargs))
		if err != nil {
			return fmt.Errorf("configuring VM %s: %w", vm.mo.Name, err)
		}
		return started(task.Reference().Value, "applying the Machine's configuration to its clone", "configuring the cloned VM", "vm", vm.mo.Name)
	case createJoinGroup:
		// Polled via taskRef like every Create task (OpenShift waits on it); the next call re-checks membership.
		ref, err := a.editVMGroup(ctx, s, cluster, t.spec.Workspace.VMGroup, vm.obj.Reference(), true)
		if err != nil {
			return err
		}
		if ref == "" { // already in it: power on next
			return provider.RequeueAfter(a.poll, "the VM is in VM group "+t.spec.Workspace.VMGroup)
		}
		return started(ref, "adding the VM to its VM group", "adding the VM to VM group "+t.spec.Workspace.VMGroup, "vm", vm.mo.Name, "vmGroup", t.spec.Workspace.VMGroup)
	case createPowerOn:
		// Through the datacenter with OpenShift's DRS override, so a cluster with manual DRS still places it.
		task, err := s.datacenter.PowerOnVM(ctx, []types.ManagedObjectReference{vm.obj.Reference()}, &types.OptionValue{
			Key: string(types.ClusterPowerOnVmOptionOverrideAutomationLevel), Value: string(types.DrsBehaviorFullyAutomated)})
		if err != nil {
			return fmt.Errorf("powering on VM %s: %w", vm.mo.Name, err)
		}
		a.observe(st, vm)
		return started(task.Reference().Value, "powering the VM on", "powering the VM on", "vm", vm.mo.Name)
	default: // createDone
		a.observe(st, vm)
		setCreation(st, a.now(), nil)
		return writeStatus(m, st, nil)
	}
}

// observe records the VM's BIOS UUID and power state in the providerStatus.
func (a *Actuator) observe(st *machinev1beta1.VSphereMachineProviderStatus, vm *machineVM) {
	if vm.mo.Config != nil && vm.mo.Config.Uuid != "" {
		st.InstanceID = new(vm.mo.Config.Uuid)
	}
	st.InstanceState = new(string(vm.mo.Runtime.PowerState))
}

// userData reads the ignition config from the userDataSecret ("userData").
func (a *Actuator) userData(ctx context.Context, m *machinev1beta1.Machine, spec *machinev1beta1.VSphereMachineProviderSpec) ([]byte, error) {
	if spec.UserDataSecret == nil || spec.UserDataSecret.Name == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: m.Namespace, Name: spec.UserDataSecret.Name}
	if err := a.client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("user data secret %s not found: create it (key %q) or fix providerSpec.userDataSecret", key, userDataSecretKey)
		}
		return nil, fmt.Errorf("reading user data secret %s: %w", key, err)
	}
	data, ok := secret.Data[userDataSecretKey]
	if !ok {
		return nil, fmt.Errorf("secret %s missing %s key", key, userDataSecretKey)
	}
	return data, nil
}

// Exists reports whether the Machine's VM exists (see existsAnswer).
func (a *Actuator) Exists(ctx context.Context, m *machinev1beta1.Machine) (bool, error) {
	t, err := a.open(ctx, m)
	if err != nil {
		return false, err
	}
	vm, err := findMachineVM(ctx, t.session, m, t.spec.Workspace.Folder)
	if err != nil {
		return false, err
	}
	provisioned := m.DeletionTimestamp != nil || provider.IsProvisioned(m)
	return existsAnswer(vm.state(m), provisioned), nil
}

// ReasonVMNameConflict is the reason of the providerStatus condition MachineCreation=False when the workspace
// folder holds a VM of the Machine's name that is not the Machine's and does not run.
const ReasonVMNameConflict = "VMNameConflict"

// conflictError tells the user why Create leaves the VM of the Machine's name alone, and what to do.
func conflictError(m *machinev1beta1.Machine, folder string, vm *machineVM) error {
	whose := "it carries no ownership mark (extraConfig " + OwnerKey + ")"
	if !vm.owner.IsZero() {
		whose = fmt.Sprintf("its ownership mark names Machine %s/%s (UID %s)", vm.owner.Namespace, vm.owner.Name, vm.owner.UID)
	}
	return fmt.Errorf("VM %s in folder %q has this Machine's name but is not this Machine's: %s and its instance UUID is not the Machine's UID %s. "+
		"It is %s and is left untouched: rename or remove that VM to let this Machine clone its own, power it on to have this Machine adopt it, or delete this Machine",
		vm.mo.Name, folder, whose, m.UID, vm.mo.Runtime.PowerState)
}
