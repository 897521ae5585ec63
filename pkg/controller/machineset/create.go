package machineset

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	apinames "k8s.io/apiserver/pkg/storage/names"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// DefaultCreateRetry paces the retries of a Create whose outcome is unknown:
// about two minutes in all, so an API server restart is ridden out.
func DefaultCreateRetry() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Steps: 11, Cap: 16 * time.Second}
}

// createMachines creates n Machines in batches of 1, 2, 4, ... until one fails.
func (r *Reconciler) createMachines(ctx context.Context, ms *machinev1beta1.MachineSet, n int) error {
	key := client.ObjectKeyFromObject(ms)
	done := 0
	for batch := 1; done < n; batch *= 2 {
		size := min(batch, n-done)
		errs := parallel(size, size, func(int) error { return r.createMachine(ctx, ms, key) })
		done += size
		if failed, first := failures(errs); failed > 0 {
			return fmt.Errorf("%d of %d Machine creations in a batch failed (%d left for later): %w",
				failed, size, n-done, first)
		}
	}
	return nil
}

// createMachine names the Machine itself (as generateName would) so a lost Create can
// be resent: AlreadyExists means it went through (docs/architecture.md, "MachineSet controller").
func (r *Reconciler) createMachine(ctx context.Context, ms *machinev1beta1.MachineSet, key types.NamespacedName) error {
	m := newMachine(ms)
	m.Name = apinames.SimpleNameGenerator.GenerateName(m.GenerateName)
	name := m.Name
	r.expectations.ExpectCreations(key, name)
	sent := m.DeepCopy() // a failed Create may have changed m
	err := r.opts.Client.Create(ctx, m)
	if unknownOutcome(err) {
		m = sent
		err = r.resendCreate(ctx, sent, err)
	}
	switch {
	case errors.Is(err, errOutcomeUnknown): // expected until the timeout, never created twice
		ctrl.LoggerFrom(ctx).Info("Machine creation outcome unknown; expecting it until the expectations timeout", "machine", m.Name, "err", err)
		return err
	case err != nil:
		r.expectations.CreationObserved(key, name) // nothing will be observed
		MachineCreatesTotal.WithLabelValues(ResultFailure).Inc()
		r.events.Eventf(ms, nil, corev1.EventTypeWarning, EventFailedCreate, "Create", "Error creating: %v", err)
		return err
	}
	MachineCreatesTotal.WithLabelValues(ResultSuccess).Inc()
	r.events.Eventf(ms, m, corev1.EventTypeNormal, EventSuccessfulCreate, "Create", "Created machine: %s", m.Name)
	return nil
}

var errOutcomeUnknown = errors.New("the API server did not say whether the Machine was created")

// resendCreate sends m's Create again while the outcome stays unknown: nil
// once the Machine exists, the API server's refusal, or errOutcomeUnknown.
func (r *Reconciler) resendCreate(ctx context.Context, m *machinev1beta1.Machine, first error) error {
	last := first
	var answer error
	err := wait.ExponentialBackoffWithContext(ctx, r.opts.CreateRetry, func(ctx context.Context) (bool, error) {
		err := r.opts.Client.Create(ctx, m.DeepCopy())
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return true, nil
		case unknownOutcome(err):
			last = err
			return false, nil
		default:
			answer = err
			return true, nil
		}
	})
	switch {
	case answer != nil:
		return answer
	case err != nil:
		return fmt.Errorf("%w: %w", errOutcomeUnknown, last)
	}
	return nil
}

// unknownOutcome reports whether err leaves open whether a Create was carried
// out: no answer (a broken connection), a timeout or a server-side failure.
func unknownOutcome(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err)
}
