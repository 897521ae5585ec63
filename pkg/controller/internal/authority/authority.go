// Package authority decides whether the Machine API controllers act on a Machine or MachineSet under
// OpenShift's MachineAPIMigration rules. See docs/openshift.md, "authoritativeAPI".
package authority

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/conditions"
	"github.com/machine-api-operator/machine-api-operator/pkg/controller/internal/patch"
)

// FeatureGate is the OpenShift feature gate that turns the rules on.
const FeatureGate = "MachineAPIMigration"

// PausedCondition is OpenShift's: True with ReasonNotMachineAPI, False with ReasonMachineAPI.
const PausedCondition machinev1beta1.ConditionType = "Paused"

// OpenShift's reasons of the Paused condition.
const (
	ReasonNotMachineAPI = "AuthoritativeAPINotMachineAPI"
	ReasonMachineAPI    = "AuthoritativeAPIMachineAPI"
)

// Step is what a controller does with a resource.
type Step int

const (
	// Reconcile as usual (setting Decision.Paused when it is not nil).
	Reconcile Step = iota
	// InitStatus writes status.authoritativeAPI (Decision.InitTo) only.
	InitStatus
	// Pause sets Decision.Paused (True) only.
	Pause
	// Ignore does nothing: status.authoritativeAPI is unknown (as OpenShift).
	Ignore
)

func (s Step) String() string {
	if s < Reconcile || s > Ignore {
		s = Ignore
	}
	return [...]string{"Reconcile", "InitStatus", "Pause", "Ignore"}[s]
}

// Decision is what Decide returns.
type Decision struct {
	Step Step
	// InitTo is the value InitStatus writes to status.authoritativeAPI.
	InitTo machinev1beta1.MachineAuthority
	// Paused is the Paused condition to set; nil leaves the conditions alone.
	Paused *machinev1beta1.Condition
}

// Decide applies the rules to a resource's spec and status authoritativeAPI.
//
//	gate  spec   status               → step
//	off   any    any                    Reconcile (the fields are ignored)
//	on    ""     any                    Reconcile (the CRD variant has no such field: its default would be MachineAPI)
//	on    X      ""                     InitStatus to X (as OpenShift's controllers do when the migration controller has not yet)
//	on    any    ClusterAPI, Migrating  Pause (Paused=True/AuthoritativeAPINotMachineAPI)
//	on    any    MachineAPI             Reconcile with Paused=False/AuthoritativeAPIMachineAPI
//	on    any    other                  Ignore
func Decide(gateOn bool, spec, status machinev1beta1.MachineAuthority) Decision {
	if !gateOn || spec == "" {
		return Decision{Step: Reconcile}
	}
	switch status {
	case "":
		return Decision{Step: InitStatus, InitTo: spec}
	case machinev1beta1.MachineAuthorityClusterAPI, machinev1beta1.MachineAuthorityMigrating:
		c := conditions.New(PausedCondition, corev1.ConditionTrue, ReasonNotMachineAPI, "", message(status))
		return Decision{Step: Pause, Paused: &c}
	case machinev1beta1.MachineAuthorityMachineAPI:
		c := conditions.New(PausedCondition, corev1.ConditionFalse, ReasonMachineAPI, machinev1beta1.ConditionSeverityInfo, message(status))
		return Decision{Step: Reconcile, Paused: &c}
	default:
		return Decision{Step: Ignore}
	}
}

func message(status machinev1beta1.MachineAuthority) string {
	return fmt.Sprintf("The AuthoritativeAPI status is set to '%s'", status)
}

// Apply logs d (a Step other than Reconcile) and makes its change to a kind's
// status.authoritativeAPI or conditions; false: there is nothing to write.
func Apply(log logr.Logger, d Decision, kind string, api *machinev1beta1.MachineAuthority, conds *[]machinev1beta1.Condition, now time.Time) bool {
	switch d.Step {
	case InitStatus:
		log.Info("status.authoritativeAPI is not set yet: setting it to spec.authoritativeAPI", "authoritativeAPI", d.InitTo)
		*api = d.InitTo
	case Pause:
		if conditions.Has(*conds, *d.Paused) {
			return false
		}
		log.Info("another API is authoritative for this "+kind+": pausing", "authoritativeAPI", *api)
		*conds = conditions.Set(*conds, *d.Paused, now)
	default:
		log.Info("status.authoritativeAPI has an unknown value: leaving the "+kind+" alone", "authoritativeAPI", *api)
		return false
	}
	return true
}

// StatusFields are the status fields the authority step writes, each under a field manager of its own: the
// first status.authoritativeAPI (InitStatus; then the migration controller's, so a later apply of the Paused
// condition from a cache behind it must not carry it back) and the Paused condition.
func StatusFields(manager string) (initAPI, paused patch.Fields) {
	return patch.Fields{Manager: manager + "-init", Keys: []string{"authoritativeAPI"}},
		patch.Fields{Manager: manager, Conditions: []string{string(PausedCondition)}}
}
