// Package rollingupdate resolves a MachineDeployment's maxSurge and maxUnavailable, bounded and in
// int64, for the MachineDeployment controller and the overshoot freeze alike (docs/machinedeployment.md).
package rollingupdate

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	mdv1beta1 "github.com/machine-api-operator/machine-api-operator/pkg/apis/machinedeployment/v1beta1"
)

// The defaults of an unset maxSurge and maxUnavailable (Deployments').
const (
	DefaultMaxSurge       = "25%"
	DefaultMaxUnavailable = "25%"
)

// Replicas is md's spec.replicas (default 1, never negative).
func Replicas(md *mdv1beta1.MachineDeployment) int64 {
	return max(int64(ptr.Deref(md.Spec.Replicas, 1)), 0)
}

// rolling reports whether md rolls (RollingUpdate, the default): only then do surge and
// unavailability apply.
func rolling(md *mdv1beta1.MachineDeployment) bool {
	return cmp.Or(md.Spec.Strategy.Type, mdv1beta1.RollingUpdateStrategy) == mdv1beta1.RollingUpdateStrategy
}

func rollingUpdate(md *mdv1beta1.MachineDeployment) mdv1beta1.RollingUpdateMachineDeployment {
	return ptr.Deref(md.Spec.Strategy.RollingUpdate, mdv1beta1.RollingUpdateMachineDeployment{})
}

// Surge is md's maxSurge against its replicas, rounded up, at most replicas (a larger surge
// never grows a rollout, the new set stops at replicas, but lets a scaling event size one set
// up to replicas+surge); 0 for strategies that never surge; an error when unreadable.
func Surge(md *mdv1beta1.MachineDeployment) (int64, error) {
	if !rolling(md) {
		return 0, nil
	}
	n := Replicas(md)
	s, err := Resolve(ptr.Deref(rollingUpdate(md).MaxSurge, intstr.FromString(DefaultMaxSurge)), n, true)
	return min(s, n), err
}

// Fenceposts resolves maxSurge (Surge) and maxUnavailable (rounded down, at most replicas)
// as Deployments do: unreadable values are 0, and both 0 makes maxUnavailable 1.
func Fenceposts(md *mdv1beta1.MachineDeployment) (surge, unavailable int64) {
	if !rolling(md) {
		return 0, 0
	}
	n := Replicas(md)
	surge, _ = Surge(md)
	unavailable, _ = Resolve(ptr.Deref(rollingUpdate(md).MaxUnavailable, intstr.FromString(DefaultMaxUnavailable)), n, false)
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, min(unavailable, n)
}

// Resolve is v against total (≥ 0): an integer clamped to [0, MaxRollingUpdateCount], or
// "N%" with N clamped to [0, MaxRollingUpdatePercent] of total, rounded up or down. So a value
// admitted while the webhook was down still resolves within the bound, and nothing overflows.
func Resolve(v intstr.IntOrString, total int64, roundUp bool) (int64, error) {
	if v.Type == intstr.Int {
		return min(max(int64(v.IntVal), 0), mdv1beta1.MaxRollingUpdateCount), nil
	}
	digits, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("%q is not a percentage", v.StrVal)
	}
	p, err := strconv.ParseInt(digits, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±MaxInt64, clamped below
		return 0, fmt.Errorf("%q is not a percentage: %w", v.StrVal, err)
	}
	p = min(max(p, 0), mdv1beta1.MaxRollingUpdatePercent)
	total = min(max(total, 0), 1<<31) // p*total < 2^38: no overflow
	if roundUp {
		return (p*total + 99) / 100, nil
	}
	return p * total / 100, nil
}
