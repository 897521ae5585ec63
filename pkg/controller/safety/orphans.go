package safety

import (
	"context"
	"errors"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/controller/machine"
)

// OrphanCollectorOptions configure an OrphanCollector.
type OrphanCollectorOptions struct {
	// Client lists Machines, normally from the manager's cache.
	Client client.Reader
	// APIReader re-lists Machines uncached before anything is deleted.
	APIReader client.Reader
	// Listers are the providers that list their instances.
	Listers []machine.InstanceLister
	// Namespace (optional) is the Machines' namespace; empty means all.
	Namespace string
	// Period is --machine-safety-orphan-vms-period: a pass runs every
	// Period, and an instance younger than Period is left alone.
	Period time.Duration
	// Gate (optional): no pass runs while it is frozen.
	Gate machine.Gate
}

// OrphanCollector deletes the provider instances that no Machine owns
// (orphanInstances), every Period, on the leader only.
type OrphanCollector struct {
	opts OrphanCollectorOptions
	now  func() time.Time
}

// NewOrphanCollector returns a collector; add it to the manager once the
// Machine API is served.
func NewOrphanCollector(opts OrphanCollectorOptions) *OrphanCollector {
	RegisterMetrics()
	if opts.Period <= 0 {
		opts.Period = DefaultOrphanPeriod
	}
	return &OrphanCollector{opts: opts, now: time.Now}
}

// NeedLeaderElection: only the leader deletes instances.
func (c *OrphanCollector) NeedLeaderElection() bool { return true }

// Start runs a pass every Period (the first one Period after the start,
// when the controllers have settled) until ctx ends.
func (c *OrphanCollector) Start(ctx context.Context) error {
	log := ctrl.Log.WithName("machine-safety-orphan-instances")
	t := time.NewTicker(c.opts.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := c.collect(ctrl.LoggerInto(ctx, log)); err != nil {
			log.Error(err, "collecting orphan instances; the next pass tries again")
		}
	}
}

// collect is one pass: observe (instances, cached Machines), decide,
// confirm with an uncached list of Machines, act (delete), report (log,
// metric).
func (c *OrphanCollector) collect(ctx context.Context) error {
	if c.opts.Gate != nil && c.opts.Gate.Frozen() {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	machines, err := listMachines(ctx, c.opts.Client, c.opts.Namespace)
	if err != nil {
		return err
	}
	var errs []error
	var fresh []*machinev1beta1.Machine
	for _, l := range c.opts.Listers {
		instances, err := l.ListInstances(ctx, c.opts.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instances: %w", err))
			continue
		}
		candidates := orphanInstances(instances, machines, c.now(), c.opts.Period)
		if len(candidates) == 0 {
			continue
		}
		// The cache may lag behind a Machine just created: confirm on the
		// API server before deleting anything.
		if fresh == nil {
			if fresh, err = listMachines(ctx, c.opts.APIReader, c.opts.Namespace); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		for _, inst := range orphanInstances(candidates, fresh, c.now(), c.opts.Period) {
			if err := l.DeleteInstance(ctx, inst); err != nil {
				errs = append(errs, fmt.Errorf("deleting orphan instance %s: %w", inst.ProviderID, err))
				continue
			}
			OrphanInstancesDeletedTotal.Inc()
			log.Info("deleted an orphan instance: no Machine owns it", "providerID", inst.ProviderID, "name", inst.Name, "createdAt", inst.CreatedAt)
		}
	}
	return errors.Join(errs...)
}

// listMachines lists the Machines of namespace (all when empty).
func listMachines(ctx context.Context, r client.Reader, namespace string) ([]*machinev1beta1.Machine, error) {
	list := &machinev1beta1.MachineList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Machines: %w", err)
	}
	out := make([]*machinev1beta1.Machine, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
