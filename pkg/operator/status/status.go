// Package status decides the ClusterOperator "machine-api" status from what a
// sync observed. Compute is a pure function; Writer persists the result and
// records events only on transitions.
package status

import (
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons.
const (
	ReasonAsExpected         = "AsExpected"
	ReasonInitializing       = "Initializing"
	ReasonSyncing            = "SyncingResources"
	ReasonSyncFailed         = "SyncingFailed"
	ReasonOperandUnavailable = "OperandUnavailable"
)

// OperatorVersionName is the status.versions entry the cluster version
// operator waits for.
const OperatorVersionName = "operator"

// Observation is what one sync saw. The controller fills it in; Compute
// turns it into conditions.
type Observation struct {
	// Now is the time of the observation.
	Now time.Time
	// ReleaseVersion is the version being rolled out; may be empty.
	ReleaseVersion string
	// NoOp is true when the platform has no Machine API provider.
	NoOp bool
	// Change describes the configuration being rolled out, for the
	// Progressing message when the version does not change (e.g. "platform AWS, proxy").
	Change string
	// Failure is the error of this sync, nil on success.
	Failure *Failure
	// FailingSince is when the current streak of failed syncs began.
	FailingSince time.Time
	// Operand is the state of the operand workloads; ignored in NoOp mode.
	Operand Operand
	// OperandUnknown: the inputs are bad and no valid configuration has been
	// seen since start, so what the operand should be is unknown; Available
	// and Progressing keep their previous values.
	OperandUnknown bool
	// WaitingForWorkers is what the install gate waits for (see
	// CheckMinimumWorkers), "" when it is met. It holds Available back only
	// while InstallGateApplies.
	WaitingForWorkers string
	// Notes are facts about the cluster that change what is served (for
	// example the NodeMaintenance API left to another operator); the
	// Available message ends with them.
	Notes []string
}

// workerGateRequeue is how often a gated install checks the Machines again
// (the operator does not watch Machines for this).
const workerGateRequeue = 5 * time.Second

// Failure is a sync error with a condition reason and an actionable message.
type Failure struct {
	Reason  string
	Message string
	// Immediate failures (bad input, which retrying cannot fix) are reported
	// as Degraded at once instead of after the grace period.
	Immediate bool
}

// Operand summarises the operand Deployment (and DaemonSet, if any).
type Operand struct {
	// RolledOut: every workload observed its latest spec and all replicas
	// run the latest template (whether they are available is Available).
	RolledOut bool
	// Available: the Deployment's Available condition is True.
	Available bool
	// Since is when Available last changed (the condition's transition time,
	// or the Deployment's creation when it has no condition yet).
	Since time.Time
	// Message says what is not ready, for humans.
	Message string
}

// Options are the timing policies.
type Options struct {
	// StableDuration is how long the operand must have been available before
	// Available=True is first reported (and again after an outage).
	StableDuration time.Duration
	// DegradedAfter is how long a failure or an operand outage must last
	// before Degraded=True, so a single transient error does not flap it.
	DegradedAfter time.Duration
}

// Compute returns the next ClusterOperator status and, when a condition is
// waiting on a timer (stable duration, degraded grace period), how long until
// it should be recomputed. prev is the current status; conditions whose status
// and reason do not change keep their last transition time, and nothing else
// in prev but conditions and versions is altered, so a steady state computes
// exactly prev.
func Compute(prev configv1.ClusterOperatorStatus, obs Observation, opts Options) (configv1.ClusterOperatorStatus, time.Duration) {
	now := obs.Now.Truncate(time.Second)
	next := *prev.DeepCopy()
	var timers requeue
	desired := desiredVersions(obs.ReleaseVersion)
	prevAvailable := find(prev.Conditions, configv1.OperatorAvailable)
	prevProgressing := find(prev.Conditions, configv1.OperatorProgressing)
	prevDegraded := find(prev.Conditions, configv1.OperatorDegraded)
	wasAvailable := prevAvailable != nil && prevAvailable.Status == configv1.ConditionTrue
	// Initializing until the operator has once been available.
	everAvailable := prevAvailable != nil && prevAvailable.Reason != ReasonInitializing
	unavailableReason := ReasonInitializing
	if everAvailable {
		unavailableReason = ReasonOperandUnavailable
	}
	rolledOut := obs.NoOp || obs.Operand.RolledOut
	stable := obs.Operand.Available && rolledOut && now.Sub(obs.Operand.Since) >= opts.StableDuration
	gated := obs.WaitingForWorkers != "" && InstallGateApplies(prev, obs)
	inputFailure := obs.Failure != nil && obs.Failure.Immediate

	// Available: is the Machine API being served?
	var available configv1.ClusterOperatorStatusCondition
	switch {
	case obs.OperandUnknown && prevAvailable != nil:
		available = *prevAvailable
	case obs.OperandUnknown:
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, ReasonInitializing, "Waiting for valid input: "+obs.Failure.Message)
	case obs.NoOp:
		available = cond(configv1.OperatorAvailable, configv1.ConditionTrue, ReasonAsExpected, "Cluster Machine API Operator is in NoOp mode")
	case gated && stable:
		// A fresh install waits for Running worker Machines, as on OpenShift.
		timers.at(now.Add(workerGateRequeue), now)
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, ReasonInitializing, "Waiting for worker Machines: "+obs.WaitingForWorkers)
	case obs.Operand.Available && (wasAvailable || stable):
		available = cond(configv1.OperatorAvailable, configv1.ConditionTrue, ReasonAsExpected, "")
	case obs.Operand.Available && rolledOut:
		timers.at(obs.Operand.Since.Add(opts.StableDuration), now)
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, unavailableReason,
			fmt.Sprintf("Waiting for the operand to stay available for %s", opts.StableDuration))
	case obs.Operand.Available:
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, unavailableReason, "Waiting for the operand to roll out: "+obs.Operand.Message)
	default:
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, unavailableReason, "Operand is not available: "+obs.Operand.Message)
	}

	// The cluster version operator reads versions as "this version is rolled
	// out": write them only when available and fully rolled out, and never
	// erase them for lack of a release version.
	complete := !obs.OperandUnknown && available.Status == configv1.ConditionTrue && rolledOut
	if complete && len(desired) > 0 {
		next.Versions = desired
	}
	if available.Status == configv1.ConditionTrue && !obs.NoOp && !obs.OperandUnknown {
		available.Message = "Cluster Machine API Operator is available at " + formatVersions(next.Versions)
	}
	if !obs.OperandUnknown {
		for _, n := range obs.Notes {
			if available.Message != "" {
				available.Message += "; "
			}
			available.Message += n
		}
	}

	// Progressing: is a version or configuration being rolled out?
	var progressing configv1.ClusterOperatorStatusCondition
	switch {
	case (obs.OperandUnknown || inputFailure) && prevProgressing != nil:
		progressing = *prevProgressing // bad input changes nothing
	case complete:
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonAsExpected, "")
	case len(desired) > 0 && !versionsEqual(prev.Versions, desired):
		msg := "Progressing towards " + formatVersions(desired)
		if obs.Operand.Message != "" && !obs.NoOp {
			msg += ": " + obs.Operand.Message
		}
		if gated && stable {
			msg += ": waiting for worker Machines: " + obs.WaitingForWorkers
		}
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonSyncing, msg)
	case !rolledOut || !everAvailable:
		msg := "Rolling out the Machine API"
		if obs.Change != "" {
			msg += " for " + obs.Change
		}
		if obs.Operand.Message != "" && !obs.NoOp {
			msg += ": " + obs.Operand.Message
		}
		if gated && stable {
			msg += ": waiting for worker Machines: " + obs.WaitingForWorkers
		}
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonSyncing, msg)
	default:
		// Rolled out but unavailable: an outage, reported by Available and
		// Degraded, not a rollout.
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonAsExpected, "")
	}

	// Degraded: has something been wrong for longer than the grace period?
	// Input errors are deterministic and reported at once.
	outage := !obs.NoOp && !obs.OperandUnknown && !obs.Operand.Available
	degraded := cond(configv1.OperatorDegraded, configv1.ConditionFalse, ReasonAsExpected, "")
	switch {
	case obs.Failure != nil && (obs.Failure.Immediate || now.Sub(obs.FailingSince) >= opts.DegradedAfter):
		degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, obs.Failure.Reason, obs.Failure.Message)
	case outage && now.Sub(obs.Operand.Since) >= opts.DegradedAfter:
		degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, ReasonOperandUnavailable,
			fmt.Sprintf("The operand has been unavailable for more than %s: %s", opts.DegradedAfter, obs.Operand.Message))
	case outage && prevDegraded != nil && prevDegraded.Status == configv1.ConditionTrue && prevDegraded.Reason == ReasonOperandUnavailable:
		// Still the same outage, even if the Deployment was re-created
		// meanwhile: do not restart the grace period.
		degraded = *prevDegraded
	case obs.Failure != nil:
		timers.at(obs.FailingSince.Add(opts.DegradedAfter), now)
		if prevDegraded != nil {
			degraded = *prevDegraded // within the grace period: no change either way
		}
	case outage:
		timers.at(obs.Operand.Since.Add(opts.DegradedAfter), now)
	}

	// A failure still within its grace period is reported when that ends,
	// even while an outage is reported meanwhile: no event may come then.
	if obs.Failure != nil && !obs.Failure.Immediate && now.Sub(obs.FailingSince) < opts.DegradedAfter {
		timers.at(obs.FailingSince.Add(opts.DegradedAfter), now)
	}

	upgradeable := cond(configv1.OperatorUpgradeable, configv1.ConditionTrue, ReasonAsExpected, "")

	next.Conditions = nil
	for _, c := range []configv1.ClusterOperatorStatusCondition{available, progressing, degraded, upgradeable} {
		next.Conditions = append(next.Conditions, withTransitionTime(prev.Conditions, c, now))
	}
	// Keep conditions other operators or humans added.
	for _, c := range prev.Conditions {
		if !ownCondition(c.Type) {
			next.Conditions = append(next.Conditions, c)
		}
	}
	return next, timers.d
}

func ownCondition(t configv1.ClusterStatusConditionType) bool {
	switch t {
	case configv1.OperatorAvailable, configv1.OperatorProgressing, configv1.OperatorDegraded, configv1.OperatorUpgradeable:
		return true
	}
	return false
}

func cond(t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string) configv1.ClusterOperatorStatusCondition {
	return configv1.ClusterOperatorStatusCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// withTransitionTime keeps the previous transition time unless the status
// changed, as condition semantics require.
func withTransitionTime(prev []configv1.ClusterOperatorStatusCondition, c configv1.ClusterOperatorStatusCondition, now time.Time) configv1.ClusterOperatorStatusCondition {
	if p := find(prev, c.Type); p != nil && p.Status == c.Status {
		c.LastTransitionTime = p.LastTransitionTime
		return c
	}
	c.LastTransitionTime = metav1.NewTime(now)
	return c
}

func find(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func desiredVersions(release string) []configv1.OperandVersion {
	if release == "" {
		return nil
	}
	return []configv1.OperandVersion{{Name: OperatorVersionName, Version: release}}
}

func versionsEqual(a, b []configv1.OperandVersion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// formatVersions renders versions as "operator: 4.22.0" (comma-separated).
func formatVersions(v []configv1.OperandVersion) string {
	if len(v) == 0 {
		return "operator: unknown version"
	}
	s := ""
	for i, ov := range v {
		if i > 0 {
			s += ", "
		}
		s += ov.Name + ": " + ov.Version
	}
	return s
}

// requeue tracks the earliest future deadline.
type requeue struct{ d time.Duration }

func (r *requeue) at(deadline, now time.Time) {
	// Compute compares whole seconds (now is truncated): a deadline within
	// a second holds from the next whole second on, and a requeue counted
	// from the truncated now would come back too early, again and again.
	if whole := deadline.Truncate(time.Second); whole.Before(deadline) {
		deadline = whole.Add(time.Second)
	}
	d := deadline.Sub(now)
	if d <= 0 {
		d = time.Second
	}
	if r.d == 0 || d < r.d {
		r.d = d
	}
}
