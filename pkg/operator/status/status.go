// Package status decides the ClusterOperator status from what a sync observed
// (Compute, pure); Writer persists it. See docs/architecture.md.
package status

import (
	"fmt"
	"slices"
	"strings"
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

// OperatorVersionName is the status.versions entry the CVO waits for.
const OperatorVersionName = "operator"

// Observation is what one sync saw; Compute turns it into conditions.
type Observation struct {
	Now            time.Time
	ReleaseVersion string // may be empty
	NoOp           bool
	// Change describes the configuration rolled out (e.g. "platform AWS, proxy").
	Change       string
	Failure      *Failure // nil on success
	FailingSince time.Time
	Operand      Operand // ignored in NoOp mode
	// OperandUnknown: bad input and no valid config since start; Available
	// and Progressing keep their previous values.
	OperandUnknown bool
	// WaitingForWorkers is what the install gate waits for ("" when met).
	WaitingForWorkers string
	// Notes end the Available message (e.g. NodeMaintenance left to another operator).
	Notes []string
}

// workerGateRequeue: Machines are not watched for the install gate.
const workerGateRequeue = 5 * time.Second

// Failure is a sync error with a condition reason and an actionable message.
type Failure struct {
	Reason  string
	Message string
	// Immediate: bad input, Degraded at once (retrying cannot fix it).
	Immediate bool
}

// Operand summarises the operand Deployment (and DaemonSet, if any).
type Operand struct {
	RolledOut bool      // every workload runs its latest spec
	Available bool      // the Deployment's Available condition is True
	Since     time.Time // when Available last changed
	Message   string    // what is not ready, for humans
}

// Options are the timing policies.
type Options struct {
	// StableDuration: how long the operand must be available before Available=True.
	StableDuration time.Duration
	// DegradedAfter: how long a failure or outage lasts before Degraded=True.
	DegradedAfter time.Duration
	// UpgradeDegradedAfter: while versions differ (install, upgrade), how long Progressing
	// must have been True before a failure or an outage turns Degraded=True, as OpenShift's
	// operator (20m there); 0: no suppression.
	UpgradeDegradedAfter time.Duration
}

// upgradeMessagePrefix starts Progressing's message while versions differ, and the
// "Status upgrade" event's.
const upgradeMessagePrefix = "Progressing towards "

// Compute returns the next status (only conditions and versions change) and when
// to recompute it (0: never); a steady state computes exactly prev.
func Compute(prev configv1.ClusterOperatorStatus, obs Observation, opts Options) (configv1.ClusterOperatorStatus, time.Duration) {
	now := obs.Now.Truncate(time.Second)
	next := *prev.DeepCopy()
	var timers requeue
	var desired []configv1.OperandVersion
	if obs.ReleaseVersion != "" {
		desired = []configv1.OperandVersion{{Name: OperatorVersionName, Version: obs.ReleaseVersion}}
	}
	upgrading := len(desired) > 0 && !slices.Equal(prev.Versions, desired)
	prevAvailable := find(prev.Conditions, configv1.OperatorAvailable)
	prevProgressing := find(prev.Conditions, configv1.OperatorProgressing)
	prevDegraded := find(prev.Conditions, configv1.OperatorDegraded)
	wasAvailable := prevAvailable != nil && prevAvailable.Status == configv1.ConditionTrue
	everAvailable := prevAvailable != nil && prevAvailable.Reason != ReasonInitializing
	unavailableReason := ReasonInitializing
	if everAvailable {
		unavailableReason = ReasonOperandUnavailable
	}
	rolledOut := obs.NoOp || obs.Operand.RolledOut
	stable := obs.Operand.Available && rolledOut && now.Sub(obs.Operand.Since) >= opts.StableDuration
	gated := obs.WaitingForWorkers != "" && InstallGateApplies(prev, obs)
	inputFailure := obs.Failure != nil && obs.Failure.Immediate

	var available configv1.ClusterOperatorStatusCondition
	switch {
	case obs.OperandUnknown && prevAvailable != nil:
		available = *prevAvailable
	case obs.OperandUnknown:
		available = cond(configv1.OperatorAvailable, configv1.ConditionFalse, ReasonInitializing, "Waiting for valid input: "+obs.Failure.Message)
	case obs.NoOp:
		available = cond(configv1.OperatorAvailable, configv1.ConditionTrue, ReasonAsExpected, "Cluster Machine API Operator is in NoOp mode")
	case gated && stable:
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

	// The CVO reads versions as "rolled out": written only then, never erased.
	complete := !obs.OperandUnknown && available.Status == configv1.ConditionTrue && rolledOut
	if complete && len(desired) > 0 {
		next.Versions = desired
	}
	if available.Status == configv1.ConditionTrue && !obs.NoOp && !obs.OperandUnknown {
		available.Message = "Cluster Machine API Operator is available at " + formatVersions(next.Versions)
	}
	if !obs.OperandUnknown && len(obs.Notes) > 0 {
		available.Message = strings.TrimPrefix(available.Message+"; "+strings.Join(obs.Notes, "; "), "; ")
	}

	var progressing configv1.ClusterOperatorStatusCondition
	switch {
	case (obs.OperandUnknown || inputFailure) && prevProgressing != nil:
		progressing = *prevProgressing // bad input changes nothing
	case complete:
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonAsExpected, "")
	case upgrading, !rolledOut || !everAvailable:
		msg := "Rolling out the Machine API"
		if upgrading {
			msg = upgradeMessagePrefix + formatVersions(desired)
		} else if obs.Change != "" {
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
		// An outage, not a rollout.
		progressing = cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonAsExpected, "")
	}

	outage := !obs.NoOp && !obs.OperandUnknown && !obs.Operand.Available
	// While versions differ, Degraded is not raised until Progressing has lasted long
	// enough (bad input excepted: retrying cannot fix it).
	upgradeDeadline, suppressed := upgradeSuppression(upgrading, prevProgressing, now, opts)
	degraded := cond(configv1.OperatorDegraded, configv1.ConditionFalse, ReasonAsExpected, "")
	switch {
	case inputFailure || obs.Failure != nil && !suppressed && now.Sub(obs.FailingSince) >= opts.DegradedAfter:
		degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, obs.Failure.Reason, obs.Failure.Message)
	case outage && !suppressed && now.Sub(obs.Operand.Since) >= opts.DegradedAfter:
		degraded = cond(configv1.OperatorDegraded, configv1.ConditionTrue, ReasonOperandUnavailable,
			fmt.Sprintf("The operand has been unavailable for more than %s: %s", opts.DegradedAfter, obs.Operand.Message))
	case outage && prevDegraded != nil && prevDegraded.Status == configv1.ConditionTrue && prevDegraded.Reason == ReasonOperandUnavailable:
		// The same outage (the Deployment may be re-created): keep the grace period.
		degraded = *prevDegraded
	case outage && suppressed && prevDegraded != nil:
		degraded = *prevDegraded // while versions differ, as OpenShift's: not cleared before Available
	case obs.Failure != nil: // its timer is set below
		if prevDegraded != nil {
			degraded = *prevDegraded // within the grace period: no change either way
		}
	case outage && now.Sub(obs.Operand.Since) < opts.DegradedAfter:
		timers.at(obs.Operand.Since.Add(opts.DegradedAfter), now)
	}

	// A failure in its grace period is reported when that ends (no event may come).
	if obs.Failure != nil && !obs.Failure.Immediate && now.Sub(obs.FailingSince) < opts.DegradedAfter {
		timers.at(obs.FailingSince.Add(opts.DegradedAfter), now)
	}
	// A suppressed failure or outage is reported when the upgrade has lasted too long.
	if suppressed && !inputFailure && (obs.Failure != nil || outage) {
		timers.at(upgradeDeadline, now)
	}

	upgradeable := cond(configv1.OperatorUpgradeable, configv1.ConditionTrue, ReasonAsExpected, "")

	next.Conditions = nil
	for _, c := range []configv1.ClusterOperatorStatusCondition{available, progressing, degraded, upgradeable} {
		next.Conditions = append(next.Conditions, withTransitionTime(prev.Conditions, c, now))
	}
	for _, c := range prev.Conditions {
		if !slices.Contains(ownConditions, c.Type) {
			next.Conditions = append(next.Conditions, c)
		}
	}
	return next, timers.d
}

// upgradeSuppression says whether Degraded is held back while versions differ, and until
// when: Progressing's transition to True (now if it is not True yet) plus UpgradeDegradedAfter.
func upgradeSuppression(upgrading bool, prevProgressing *configv1.ClusterOperatorStatusCondition, now time.Time, opts Options) (time.Time, bool) {
	if !upgrading || opts.UpgradeDegradedAfter <= 0 {
		return time.Time{}, false
	}
	since := now
	if prevProgressing != nil && prevProgressing.Status == configv1.ConditionTrue {
		since = prevProgressing.LastTransitionTime.Time
	}
	deadline := since.Add(opts.UpgradeDegradedAfter)
	return deadline, now.Before(deadline)
}

// ownConditions are the conditions Compute decides; it keeps the others as they are.
var ownConditions = []configv1.ClusterStatusConditionType{
	configv1.OperatorAvailable, configv1.OperatorProgressing, configv1.OperatorDegraded, configv1.OperatorUpgradeable}

func cond(t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string) configv1.ClusterOperatorStatusCondition {
	return configv1.ClusterOperatorStatusCondition{Type: t, Status: s, Reason: reason, Message: msg}
}

// withTransitionTime keeps the previous transition time unless the status changed.
func withTransitionTime(prev []configv1.ClusterOperatorStatusCondition, c configv1.ClusterOperatorStatusCondition, now time.Time) configv1.ClusterOperatorStatusCondition {
	c.LastTransitionTime = metav1.NewTime(now)
	if p := find(prev, c.Type); p != nil && p.Status == c.Status {
		c.LastTransitionTime = p.LastTransitionTime
	}
	return c
}

func find(conds []configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) *configv1.ClusterOperatorStatusCondition {
	if i := slices.IndexFunc(conds, func(c configv1.ClusterOperatorStatusCondition) bool { return c.Type == t }); i >= 0 {
		return &conds[i]
	}
	return nil
}

// formatVersions renders versions as "operator: 4.22.0" (comma-separated).
func formatVersions(v []configv1.OperandVersion) string {
	if len(v) == 0 {
		return "operator: unknown version"
	}
	var s []string
	for _, ov := range v {
		s = append(s, ov.Name+": "+ov.Version)
	}
	return strings.Join(s, ", ")
}

// requeue tracks the earliest future deadline.
type requeue struct{ d time.Duration }

func (r *requeue) at(deadline, now time.Time) {
	// Round up to whole seconds (now is truncated), or it comes back too early.
	if whole := deadline.Truncate(time.Second); whole.Before(deadline) {
		deadline = whole.Add(time.Second)
	}
	d := max(deadline.Sub(now), time.Second) // whole seconds
	if r.d == 0 || d < r.d {
		r.d = d
	}
}
