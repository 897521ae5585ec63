package safety

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestFlags: machine-controller-manager's flag names set the options, and
// values the checks cannot work with are refused. Breaks if: a flag were
// renamed (MCM command lines would not start) or Validate accepted 0.
func TestFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o, m := DefaultOvershootOptions(), DefaultMachineControllerOptions()
	o.AddFlags(fs)
	m.AddFlags(fs)
	if err := fs.Parse([]string{"--safety-up=5", "--safety-down=2", "--machine-safety-overshooting-period=30s",
		"--machine-safety-apiserver-statuscheck-period=20s", "--machine-safety-apiserver-statuscheck-timeout=10s",
		"--machine-safety-orphan-vms-period=5m", "--machine-safety-orphan-vms-max-deletions=2", "--machine-safety-orphan-vms-dry-run"}); err != nil {
		t.Fatal(err)
	}
	if want := (OvershootOptions{SafetyUp: 5, SafetyDown: 2, Period: 30 * time.Second}); o != want {
		t.Errorf("overshoot options %+v, want %+v", o, want)
	}
	if want := (MachineControllerOptions{APIServerCheckPeriod: 20 * time.Second, APIServerCheckTimeout: 10 * time.Second, OrphanPeriod: 5 * time.Minute,
		OrphanMaxDeletions: 2, OrphanDryRun: true}); m != want {
		t.Errorf("machine controller options %+v, want %+v", m, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid overshoot options refused: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("valid machine controller options refused: %v", err)
	}
	for _, bad := range []OvershootOptions{{SafetyUp: 0, SafetyDown: 0, Period: time.Minute}, {SafetyUp: 2, SafetyDown: -1, Period: time.Minute}, {SafetyUp: 2, SafetyDown: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if d := DefaultMachineControllerOptions(); d.OrphanMaxDeletions != 5 || d.OrphanDryRun {
		t.Errorf("defaults %+v, want at most 5 deletions a pass, no dry run", d)
	}
	ok := DefaultMachineControllerOptions()
	noDeletions := ok
	noDeletions.OrphanMaxDeletions = 0
	for _, bad := range []MachineControllerOptions{{APIServerCheckTimeout: time.Second, OrphanPeriod: time.Second, OrphanMaxDeletions: 1}, {APIServerCheckPeriod: time.Second, OrphanPeriod: time.Second, OrphanMaxDeletions: 1},
		{APIServerCheckPeriod: time.Second, APIServerCheckTimeout: time.Second, OrphanMaxDeletions: 1}, noDeletions} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
