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
	Client    client.Reader            // lists Machines, normally cached
	APIReader client.Reader            // re-lists them uncached before a deletion
	Listers   []machine.InstanceLister // the providers listing their instances
	Namespace string                   // of the Machines; empty: all
	// Period is --machine-safety-orphan-vms-period: between passes, and an instance's grace.
	Period time.Duration
	Gate   machine.Gate // optional: no pass while it is frozen
}

// OrphanCollector deletes the provider instances no Machine owns
// (orphanInstances), every Period, on the leader only.
type OrphanCollector struct {
	opts OrphanCollectorOptions
	now  func() time.Time
}

// NewOrphanCollector returns a collector; add it to the manager once the Machine API is served.
func NewOrphanCollector(opts OrphanCollectorOptions) *OrphanCollector {
	RegisterMetrics()
	if opts.Period <= 0 {
		opts.Period = DefaultOrphanPeriod
	}
	return &OrphanCollector{opts: opts, now: time.Now}
}

// NeedLeaderElection: only the leader deletes instances.
func (c *OrphanCollector) NeedLeaderElection() bool { return true }

// Start runs a pass every Period (the first after one Period) until ctx ends.
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

// collect is one pass: observe, decide, confirm uncached, delete, report.
func (c *OrphanCollector) collect(ctx context.Context) error {
	if c.opts.Gate != nil && c.opts.Gate.Frozen() {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	machines, err := listMachines(ctx, c.opts.Client, client.InNamespace(c.opts.Namespace))
	if err != nil {
		return fmt.Errorf("listing Machines: %w", err)
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
		if fresh == nil { // the cache may lag behind a Machine just created
			if fresh, err = listMachines(ctx, c.opts.APIReader, client.InNamespace(c.opts.Namespace)); err != nil {
				return errors.Join(append(errs, fmt.Errorf("listing Machines: %w", err))...)
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

// listMachines lists Machines.
func listMachines(ctx context.Context, r client.Reader, opts ...client.ListOption) ([]*machinev1beta1.Machine, error) {
	list := &machinev1beta1.MachineList{}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*machinev1beta1.Machine, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
