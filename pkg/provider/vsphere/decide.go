package vsphere

import (
	"strings"

	"github.com/vmware/govmomi/vim25/types"
)

// taskState is what vCenter says about the task in providerStatus.taskRef.
type taskState int

const (
	taskNone      taskState = iota // no taskRef
	taskRunning                    // queued or running
	taskSucceeded                  // finished successfully
	taskFailed                     // finished with an error
	taskGone                       // vCenter no longer knows it (expired)
)

// vmState is what the provider observed of the Machine's VM.
type vmState struct {
	found bool
	owner ownership
	// adopted: a foreign VM whose providerID is the Machine's (an earlier Update adopted it); adoptable: the
	// Machine has no providerID yet, so a running foreign VM of its name becomes its instance, as on OpenShift.
	adopted, adoptable bool
	power              types.VirtualMachinePowerState
	group              groupMembership
}

// ownership says whose the VM found for a Machine is.
type ownership int

const (
	// ownerForeign: found by name only, without this Machine's mark (the installer's, a user's, another
	// Machine's): adopted at most, never configured, re-UUIDed or powered on.
	ownerForeign ownership = iota
	// ownerMarked: carries this Machine's ownership mark but not its UID as instance UUID: a clone vCenter did
	// not configure; Create configures it.
	ownerMarked
	// ownerMachine: its instance UUID is the Machine's UID (this provider's clone, or OpenShift's).
	ownerMachine
)

// ours reports a VM this Machine's Create made (or OpenShift's did): Create may change it.
func (v vmState) ours() bool { return v.found && v.owner != ownerForeign }

// groupMembership is the VM's place in the VM group workspace.vmGroup names, observed only for a powered-off VM.
type groupMembership int

const (
	groupNone    groupMembership = iota // no group named, or not observed
	groupOutside                        // the group does not list the VM (or does not exist)
	groupInside                         // the group lists the VM
)

// createStep is the next step of Create.
type createStep int

const (
	createWait       createStep = iota // a task is in flight: poll again later
	createClone                        // no VM yet: start the clone
	createReportTask                   // the last task failed and left no running VM: report it, retry later
	createConfigure                    // a powered-off clone with the Machine's mark but not its configuration
	createAdopt                        // a running foreign VM of the Machine's name: report it, change nothing
	createConflict                     // a foreign VM of the Machine's name that is not running: leave it, report
	createJoinGroup                    // the powered-off VM is not in its VM group yet: add it
	createPowerOn                      // the VM exists powered off: power it on
	createDone                         // the VM runs
)

// decideCreate picks Create's next step; a failed task is reported first (its step is then retried).
func decideCreate(task taskState, vm vmState) createStep {
	switch {
	case task == taskRunning:
		return createWait
	case task == taskFailed:
		return createReportTask
	case vm.found && !vm.ours() && (vm.adopted || vm.adoptable && vm.power == types.VirtualMachinePowerStatePoweredOn):
		return createAdopt
	case vm.found && !vm.ours():
		return createConflict
	case vm.owner == ownerMarked && vm.power == types.VirtualMachinePowerStatePoweredOff:
		return createConfigure
	case vm.found && vm.power == types.VirtualMachinePowerStatePoweredOn:
		return createDone
	case vm.found && vm.group == groupOutside: // before power-on, as OpenShift
		return createJoinGroup
	case vm.found:
		return createPowerOn
	default:
		return createClone
	}
}

// ignoreFailedClone drops a failed clone task when the Machine's VM exists: the second clone of a Create
// retried after a lost status fails on the duplicate name while the first one made the VM.
func ignoreFailedClone(task taskState, descriptionID string, vm vmState) taskState {
	if task == taskFailed && vm.found && strings.Contains(descriptionID, "clone") {
		return taskNone
	}
	return task
}

// deleteStep is the next step of Delete.
type deleteStep int

const (
	deleteWait        deleteStep = iota // a clone, power-off or destroy task is in flight
	deleteGone                          // no VM: nothing to do
	deletePowerOff                      // stop the VM first
	deleteWaitVolumes                   // the Node still reports attached volumes
	deleteWaitDisks                     // disks beyond the template's and data disks are still attached
	deleteDetachDisks                   // drain skipped: detach those disks (files kept) before the destroy
	deleteLeaveGroup                    // take the VM out of its VM group, as OpenShift does on delete
	deleteDestroy                       // destroy the powered-off VM
)

// deletion is what Delete observed; it keeps no state (providerStatus is not persisted from Delete).
type deletion struct {
	cloneRunning bool // the create task (taskRef) has not finished: its VM may still appear
	vm           vmState
	vmBusy       bool // a task on the VM is queued or running
	nodeVolumes  bool // the linked Node still lists attached volumes
	drainSkipped bool // machine.openshift.io/exclude-node-draining
	extraDisks   bool
	// detachable: among the disks, some that are not the VM's own (first disk, or a file named after the VM)
	detachable bool
}

// decideDelete picks Delete's next step, in OpenShift's order: power off, wait for the Node's volumes to
// detach, refuse to destroy disks that are not the VM's own (or, drain skipped, detach them), destroy.
func decideDelete(d deletion) deleteStep {
	switch {
	case d.cloneRunning:
		return deleteWait
	case !d.vm.found, !d.vm.ours() && !d.vm.adopted: // a foreign VM the Machine never adopted is left alone
		return deleteGone
	case d.vmBusy:
		return deleteWait
	case d.vm.power != types.VirtualMachinePowerStatePoweredOff:
		return deletePowerOff
	case d.nodeVolumes && !d.drainSkipped:
		return deleteWaitVolumes
	case d.extraDisks && d.drainSkipped && d.detachable: // nobody waited for the volumes to detach: keep them
		return deleteDetachDisks
	case d.extraDisks:
		return deleteWaitDisks
	case d.vm.group == groupInside:
		return deleteLeaveGroup
	default:
		return deleteDestroy
	}
}

// existsAnswer is Exists' answer: a VM never powered on, of a Machine not yet provisioned, does not count yet,
// so that Create is called again and powers it on (as on OpenShift). A foreign VM counts once adopted, or when
// it runs and the Machine has no providerID yet (Update adopts it); a stopped one is left to Create to report.
func existsAnswer(vm vmState, provisioned bool) bool {
	on := vm.power == types.VirtualMachinePowerStatePoweredOn
	switch {
	case !vm.found:
		return false
	case !vm.ours():
		return vm.adopted || vm.adoptable && on
	}
	return provisioned || on
}

// updateFinds reports whether Update may report on the VM found: its own, or a foreign one adopted or
// adoptable; a foreign VM under a Machine with another providerID is not the Machine's instance.
func updateFinds(vm vmState) bool {
	return vm.ours() || vm.found && (vm.adopted || vm.adoptable)
}
