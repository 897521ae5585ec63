// Package crdwait starts a controller once the API server serves the custom resources it watches, so a binary
// started before its CRDs waits instead of exiting. A poll costs one discovery request per missing group version.
package crdwait

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	mapimetrics "github.com/machine-api-operator/machine-api-operator/pkg/metrics"
)

// DefaultPollInterval is how often a waiting gate asks whether its kinds
// are served.
const DefaultPollInterval = 5 * time.Second

// WaitingGauge is 1 for each kind a controller waits for, 0 once served.
var WaitingGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "machine_api_operand_waiting_for_crd",
	Help: "1 while a controller waits for the API server to serve a kind it watches (its CRD is not installed), 0 once served.",
}, []string{"controller", "kind"})

// Gate is a controller whose setup waits for the kinds it watches.
type Gate struct {
	Name  string                    // in logs, the readiness check and the metric
	Kinds []schema.GroupVersionKind // the custom resource kinds it reads or watches
	// Setup registers the controller; called once, when every kind is served.
	Setup func(manager.Manager) error
	// Required fails the readiness check "crd-<Name>" while the gate waits.
	Required     bool
	PollInterval time.Duration // default DefaultPollInterval
}

// Add registers g with mgr (before mgr.Start): g.Setup runs now if every kind
// is served (its error returned), else once they are (its error stops mgr).
func Add(mgr manager.Manager, g Gate) error {
	_, err := add(mgr, g)
	return err
}

// add is Add, returning the gate's waiter (for tests).
func add(mgr manager.Manager, g Gate) (*waiter, error) {
	if g.Name == "" || g.Setup == nil {
		return nil, errors.New("crdwait: a gate needs a name and a setup function")
	}
	if g.PollInterval <= 0 {
		g.PollInterval = DefaultPollInterval
	}
	mapimetrics.Register(WaitingGauge)
	w := &waiter{gate: g, mgr: mgr}
	if g.Required {
		if err := mgr.AddReadyzCheck("crd-"+g.Name, w.ready); err != nil {
			return nil, fmt.Errorf("adding the readiness check of %s: %w", g.Name, err)
		}
	}
	missing, err := w.missing()
	if err == nil && len(missing) == 0 {
		return w, w.setup()
	}
	return w, mgr.Add(w)
}

// waiter is the manager runnable of a gate that could not start at once.
type waiter struct {
	gate Gate
	mgr  manager.Manager

	mu      sync.Mutex
	started bool   // Setup has run
	waiting string // what the last poll found missing, for readiness
}

// NeedLeaderElection: every replica sets up its controllers (which still wait
// for leadership).
func (w *waiter) NeedLeaderElection() bool { return false }

// Start polls until the kinds are served, then sets the controller up.
func (w *waiter) Start(ctx context.Context) error {
	log := w.mgr.GetLogger().WithValues("controller", w.gate.Name)
	var last string // what the polls find, logged once per change
	err := wait.PollUntilContextCancel(ctx, w.gate.PollInterval, true, func(context.Context) (bool, error) {
		missing, err := w.missing()
		if err == nil && len(missing) == 0 {
			return true, nil
		}
		if now := fmt.Sprint(err, kindList(missing)); now != last {
			last = now
			if err != nil {
				log.Error(err, "cannot tell whether the API server serves the kinds this controller watches; retrying")
			} else {
				log.Info("waiting for CustomResourceDefinitions: the API server does not serve these kinds yet; the controller starts once they are installed",
					"missing", kindList(missing))
			}
		}
		return false, nil
	})
	if err != nil {
		return nil // the manager is stopping
	}
	log.Info("the kinds this controller watches are served; starting it")
	return w.setup()
}

// setup runs the gate's Setup once and records that it did.
func (w *waiter) setup() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return nil
	}
	if err := w.gate.Setup(w.mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", w.gate.Name, err)
	}
	w.started = true
	w.waiting = ""
	return nil
}

// missing lists the gate's kinds not served and updates WaitingGauge; any
// error but "no match" means nothing is known.
func (w *waiter) missing() ([]schema.GroupVersionKind, error) {
	var missing []schema.GroupVersionKind
	var errs []error
	for _, gvk := range w.gate.Kinds {
		_, err := w.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case err == nil:
			WaitingGauge.WithLabelValues(w.gate.Name, kindName(gvk)).Set(0)
		case meta.IsNoMatchError(err):
			missing = append(missing, gvk)
			WaitingGauge.WithLabelValues(w.gate.Name, kindName(gvk)).Set(1)
		default:
			errs = append(errs, fmt.Errorf("looking up %s: %w", kindName(gvk), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.waiting = kindList(missing)
	w.mu.Unlock()
	return missing, nil
}

// ready is the gate's readiness check: failing until Setup has run.
func (w *waiter) ready(*http.Request) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return nil
	}
	if w.waiting != "" {
		return fmt.Errorf("the %s controller waits for CustomResourceDefinitions: %s not served", w.gate.Name, w.waiting)
	}
	return fmt.Errorf("the %s controller has not started yet", w.gate.Name)
}

// kindName is "Kind.group/version", as kubectl names a kind.
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.Kind + "." + gvk.GroupVersion().String()
}

func kindList(gvks []schema.GroupVersionKind) string {
	names := make([]string, 0, len(gvks))
	for _, gvk := range gvks {
		names = append(names, kindName(gvk))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
