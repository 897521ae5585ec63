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
}

// Failure is a sync error with a condition reason and an actionable message.
type Failure struct {
	Reason  string
	Message string
}

// Operand summarises the operand Deployment (and DaemonSet, if any).
type Operand struct {
	// RolledOut: every workload observed its latest generation, all replicas
	// run the latest template, and none is unavailable.
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
	versionChanging := !versionsEqual(prev.Versions, desired)
	wasAvailable := conditionIs(prev.Conditions, configv1.OperatorAvailable, configv1.ConditionTrue)

	// Available.
	var available configv1.ClusterOperatorStatusCondition
	switch {
	case obs.NoOp:
		available = cond(configv1.OperatorAvailable, configv1.ConditionTrue, ReasonAsExpected, "Cluster Machine API Operator is in NoOp mode")
	case obs.Operand.Available && (wasAvailable || now.Sub(obs.Operand.Since) >= opts.StableDuration):
		available = cond(configv1.OperatorAvailable, configv1.ConditionTrue, ReasonAsExpected,
			"Cluster Machine API Operator is available at "+formatVersions(desired))
	case obs.Operand.Available:
		timers.at(obs.Operand.Since.Add(opts.StableDuration), now)
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, initializingOr(prev, ReasonOperandUnavailable),
			fmt.Sprintf("Waiting for the operand to stay available for %s", opts.StableDuration))
	default:
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, initializingOr(prev, ReasonOperandUnavailable),
			"Operand is not available: "+obs.Operand.Message)
	}

	// Progressing.
	var progressing configv1.ClusterOperatorStatusCondition
	switch {
	case obs.Failure == nil && available.Status == configv1.ConditionTrue && (obs.NoOp || obs.Operand.RolledOut):
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonAsExpected, "")
	case versionChanging && obs.ReleaseVersion != "":
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonSyncing,
			"Progressing towards "+formatVersions(desired))
	default:
		msg := "Rolling out the Machine API"
		if obs.Change != "" {
			msg += " for " + obs.Change
		}
		if obs.Operand.Message != "" && !obs.NoOp {
			msg += ": " + obs.Operand.Message
		}
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonSyncing, msg)
	}

	// Degraded.
	degraded := cond(configv1.OperatorDegraded, configv1.ConditionFalse, ReasonAsExpected, "")
	switch {
	case obs.Failure != nil:
		if now.Sub(obs.FailingSince) >= opts.DegradedAfter {
			degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, obs.Failure.Reason, obs.Failure.Message)
		} else {
			timers.at(obs.FailingSince.Add(opts.DegradedAfter), now)
			if c := find(prev.Conditions, configv1.OperatorDegraded); c != nil {
				degraded = *c // within the grace period: no change either way
			}
		}
	case !obs.NoOp && !obs.Operand.Available:
		if now.Sub(obs.Operand.Since) >= opts.DegradedAfter {
			degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, ReasonOperandUnavailable,
				fmt.Sprintf("The operand has been unavailable for more than %s: %s", opts.DegradedAfter, obs.Operand.Message))
		} else {
			timers.at(obs.Operand.Since.Add(opts.DegradedAfter), now)
		}
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
	// The cluster version operator reads versions as "this version is
	// rolled out": only write them once available.
	if available.Status == configv1.ConditionTrue {
		next.Versions = desired
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

// initializingOr reports Initializing until the operator has once been
// available (versions written), then the given reason.
func initializingOr(prev configv1.ClusterOperatorStatus, reason string) string {
	if len(prev.Versions) == 0 {
		return ReasonInitializing
	}
	return reason
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

func conditionIs(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType, s configv1.ConditionStatus) bool {
	c := find(conds, t)
	return c != nil && c.Status == s
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
	d := deadline.Sub(now)
	if d <= 0 {
		d = time.Second
	}
	if r.d == 0 || d < r.d {
		r.d = d
	}
}
