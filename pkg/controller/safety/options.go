package safety

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// OvershootOptions configure the overshoot freeze (machineset-controller).
type OvershootOptions struct {
	SafetyUp   int           // --safety-up
	SafetyDown int           // --safety-down
	Period     time.Duration // --machine-safety-overshooting-period
}

// DefaultOvershootOptions are machine-controller-manager's defaults.
func DefaultOvershootOptions() OvershootOptions {
	return OvershootOptions{SafetyUp: DefaultSafetyUp, SafetyDown: DefaultSafetyDown, Period: DefaultOvershootingPeriod}
}

// AddFlags adds the overshoot flags to fs.
func (o *OvershootOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.SafetyUp, "safety-up", o.SafetyUp,
		"How many Machines beyond its expected maximum (2×replicas, or in a MachineDeployment replicas + maxSurge) a MachineSet may have before it is frozen: it then creates no Machines.")
	fs.IntVar(&o.SafetyDown, "safety-down", o.SafetyDown,
		"How far below the freeze threshold a frozen MachineSet's Machine count must fall before the freeze lifts.")
	fs.DurationVar(&o.Period, "machine-safety-overshooting-period", o.Period,
		"How often every MachineSet's Machine count is checked against the freeze thresholds (also on every Machine creation).")
}

// Validate reports a flag value the freeze cannot work with.
func (o OvershootOptions) Validate() error {
	var errs []error
	if o.SafetyUp < 1 {
		errs = append(errs, fmt.Errorf("--safety-up must be at least 1, got %d", o.SafetyUp))
	}
	if o.SafetyDown < 0 {
		errs = append(errs, fmt.Errorf("--safety-down must not be negative, got %d", o.SafetyDown))
	}
	if o.Period <= 0 {
		errs = append(errs, fmt.Errorf("--machine-safety-overshooting-period must be positive, got %s", o.Period))
	}
	return errors.Join(errs...)
}

// MachineControllerOptions configure the machine controller's safety checks.
type MachineControllerOptions struct {
	APIServerCheckPeriod  time.Duration // --machine-safety-apiserver-statuscheck-period
	APIServerCheckTimeout time.Duration // --machine-safety-apiserver-statuscheck-timeout
	OrphanPeriod          time.Duration // --machine-safety-orphan-vms-period (also an instance's grace)
	OrphanMaxDeletions    int           // --machine-safety-orphan-vms-max-deletions
	OrphanDryRun          bool          // --machine-safety-orphan-vms-dry-run
}

// DefaultMachineControllerOptions are machine-controller-manager's defaults.
func DefaultMachineControllerOptions() MachineControllerOptions {
	return MachineControllerOptions{
		APIServerCheckPeriod:  DefaultAPIServerCheckPeriod,
		APIServerCheckTimeout: DefaultAPIServerCheckTimeout,
		OrphanPeriod:          DefaultOrphanPeriod,
		OrphanMaxDeletions:    DefaultOrphanMaxDeletions,
	}
}

// AddFlags adds the machine controller's safety flags to fs.
func (o *MachineControllerOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.APIServerCheckPeriod, "machine-safety-apiserver-statuscheck-period", o.APIServerCheckPeriod,
		"How often the machine controller checks that the API server answers.")
	fs.DurationVar(&o.APIServerCheckTimeout, "machine-safety-apiserver-statuscheck-timeout", o.APIServerCheckTimeout,
		"How long the API server may stay unreachable before the machine controller stops creating and deleting instances, until it answers again.")
	fs.DurationVar(&o.OrphanPeriod, "machine-safety-orphan-vms-period", o.OrphanPeriod,
		"How often instances that carry this project's ownership mark and whose Machine is gone are looked for and deleted; an instance younger than this is left alone.")
	fs.IntVar(&o.OrphanMaxDeletions, "machine-safety-orphan-vms-max-deletions", o.OrphanMaxDeletions,
		"How many orphan instances one pass deletes at most; the others wait for the next pass.")
	fs.BoolVar(&o.OrphanDryRun, "machine-safety-orphan-vms-dry-run", o.OrphanDryRun,
		"Only report orphan instances (log, event, metric machine_api_orphan_instances_dry_run_total); delete none.")
}

// Validate reports a flag value the checks cannot work with.
func (o MachineControllerOptions) Validate() error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--machine-safety-apiserver-statuscheck-period", o.APIServerCheckPeriod},
		{"--machine-safety-apiserver-statuscheck-timeout", o.APIServerCheckTimeout},
		{"--machine-safety-orphan-vms-period", o.OrphanPeriod},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", d.flag, d.v))
		}
	}
	if o.OrphanMaxDeletions < 1 {
		errs = append(errs, fmt.Errorf("--machine-safety-orphan-vms-max-deletions must be at least 1, got %d (use --machine-safety-orphan-vms-dry-run to delete none)", o.OrphanMaxDeletions))
	}
	if o.OrphanMaxDeletions < 1 {
		errs = append(errs, fmt.Errorf("--machine-safety-orphan-vms-max-deletions must be at least 1, got %d (use --machine-safety-orphan-vms-dry-run to delete none)", o.OrphanMaxDeletions))
	}
	return errors.Join(errs...)
}
