package safety

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// TestDecideAPIServer: frozen only after more than the timeout of failed
// probes, thawed by the first answer. Breaks if: the first failure froze,
// or the outage were timed from the latest failure.
func TestDecideAPIServer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const period, timeout = time.Minute, 30 * time.Second
	down := apiServerState{downSince: t0}
	frozen := apiServerState{frozen: true, downSince: t0}
	tests := []struct {
		name      string
		state     apiServerState
		reachable bool
		at        time.Time
		want      probeOutcome
	}{
		{"reachable stays so", apiServerState{}, true, t0, probeOutcome{next: period}},
		{"first failure starts the clock", apiServerState{}, false, t0, probeOutcome{state: down, next: 6 * time.Second}},
		{"down for the timeout: not yet", down, false, t0.Add(timeout), probeOutcome{state: down, next: 6 * time.Second}},
		{"down longer than the timeout freezes", down, false, t0.Add(timeout + time.Second), probeOutcome{state: frozen, next: 6 * time.Second, froze: true}},
		{"frozen stays frozen, probed often", frozen, false, t0.Add(time.Hour), probeOutcome{state: frozen, next: 6 * time.Second}},
		{"an answer thaws", frozen, true, t0.Add(time.Hour), probeOutcome{next: period, thawed: true}},
		{"an answer before the timeout resets the clock", down, true, t0.Add(time.Second), probeOutcome{next: period}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideAPIServer(tt.state, tt.reachable, tt.at, period, timeout); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// switchReader answers NotFound, or fails while down is set.
type switchReader struct{ down atomic.Bool }

func (r *switchReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	if r.down.Load() {
		return errors.New("dial tcp: connection refused")
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: "machine.openshift.io", Resource: "machines"}, key.Name)
}

func (r *switchReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// TestAPIServerGateFreezesAndThaws: the gate runs its probe loop against a
// reader that stops answering: frozen (and the gauge 1) after the timeout,
// thawed (gauge 0) once it answers again. Breaks if: Start never stored the
// frozen state, or a NotFound counted as a failure.
func TestAPIServerGateFreezesAndThaws(t *testing.T) {
	r := &switchReader{}
	g := NewAPIServerGate(r, "ns", MachineControllerOptions{APIServerCheckPeriod: 20 * time.Millisecond, APIServerCheckTimeout: 200 * time.Millisecond})
	testenv.Run(t, g)
	probed := func(after time.Time) poll.Condition {
		return poll.Check(func() error {
			if time.Unix(0, g.lastProbe.Load()).Before(after) {
				return fmt.Errorf("no probe since %s", after)
			}
			return nil
		})
	}
	poll.Eventually(t, 5*time.Second, "a probe", probed(time.Now()))
	if g.Frozen() || gaugeValue(t) != 0 {
		t.Fatalf("frozen while the API server answers NotFound")
	}

	downAt := time.Now()
	r.down.Store(true)
	poll.Eventually(t, 5*time.Second, "frozen", poll.Check(func() error {
		if !g.Frozen() {
			return errors.New("not frozen")
		}
		return nil
	}))
	if since := time.Since(downAt); since < 200*time.Millisecond {
		t.Errorf("frozen %s after the outage began, before the 200ms timeout", since)
	}
	if v := gaugeValue(t); v != 1 {
		t.Errorf("machine_api_machine_controller_frozen = %v, want 1", v)
	}

	r.down.Store(false)
	poll.Eventually(t, 5*time.Second, "thawed", poll.Check(func() error {
		if g.Frozen() {
			return errors.New("still frozen")
		}
		return nil
	}))
	if v := gaugeValue(t); v != 0 {
		t.Errorf("machine_api_machine_controller_frozen = %v, want 0", v)
	}
}

func gaugeValue(t *testing.T) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := MachineControllerFrozen.Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
