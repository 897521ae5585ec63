package safety

import (
	"context"
	"errors"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// OrphanCollectorName names the collector (logs, events).
const OrphanCollectorName = "machine-safety-orphan-instances"

// Event reasons of the orphan collection, recorded on the (gone) Machine its mark names.
const (
	EventOrphanInstanceDeleted = "OrphanInstanceDeleted"
	EventOrphanInstanceDryRun  = "OrphanInstanceDryRun"
)

// OrphanCollectorOptions configure an OrphanCollector.
type OrphanCollectorOptions struct {
	Client client.Reader // lists Namespace's Machines, normally cached
	// APIReader lists the Machines of the other namespaces that marks name, and re-lists all uncached
	// before a deletion.
	APIReader client.Reader
	Listers   []provider.InstanceLister // the providers listing their instances
	Namespace string                    // of the Machines whose places the providers list; empty: all
	// Period is --machine-safety-orphan-vms-period: between passes, and an instance's grace.
	Period time.Duration
	// MaxDeletions is --machine-safety-orphan-vms-max-deletions: deletions (or, dry, reports) per pass; 0
	// means DefaultOrphanMaxDeletions.
	MaxDeletions int
	// DryRun is --machine-safety-orphan-vms-dry-run: report orphans (log, event, metric), delete nothing.
	DryRun   bool
	Recorder events.EventRecorder // optional
	Gate     provider.Gate        // optional: no pass while it is frozen
}

// OrphanCollector deletes the provider instances that carry this project's ownership mark and whose Machine
// is gone (orphanInstances), every Period, on the leader only.
type OrphanCollector struct {
	opts  OrphanCollectorOptions
	clock clock.PassiveClock
}

// withDefaults fills in the zero (or negative) Period and MaxDeletions.
func (o OrphanCollectorOptions) withDefaults() OrphanCollectorOptions {
	if o.Period <= 0 {
		o.Period = DefaultOrphanPeriod
	}
	if o.MaxDeletions <= 0 {
		o.MaxDeletions = DefaultOrphanMaxDeletions
	}
	return o
}

// NewOrphanCollector returns a collector; add it to the manager once the Machine API is served.
func NewOrphanCollector(opts OrphanCollectorOptions) *OrphanCollector {
	RegisterMetrics()
	return &OrphanCollector{opts: opts.withDefaults(), clock: clock.RealClock{}}
}

// NeedLeaderElection is true: only the leader deletes instances.
func (c *OrphanCollector) NeedLeaderElection() bool { return true }

// Start runs a pass every Period (the first after one Period) until ctx ends.
func (c *OrphanCollector) Start(ctx context.Context) error {
	t := time.NewTicker(c.opts.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := c.Pass(ctx); err != nil {
			ctrl.Log.WithName(OrphanCollectorName).Error(err, "collecting orphan instances; the next pass tries again")
		}
	}
}

// Pass is one collection pass, as Start runs every Period: observe, decide, confirm uncached, delete (at most
// MaxDeletions), report.
func (c *OrphanCollector) Pass(ctx context.Context) error {
	if c.opts.Gate != nil && c.opts.Gate.Frozen() {
		return nil
	}
	log := ctrl.Log.WithName(OrphanCollectorName)
	ctx = ctrl.LoggerInto(ctx, log)
	var errs []error
	budget := c.opts.MaxDeletions
	for _, l := range c.opts.Listers {
		instances, err := l.ListInstances(ctx, c.opts.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing instances: %w", err))
			continue
		}
		machines, listed := c.machines(ctx, ownerNamespaces(instances), true)
		candidates := orphanInstances(instances, machines, listed, c.clock.Now(), c.opts.Period)
		if len(candidates) == 0 {
			continue
		}
		// The cache may lag behind a Machine just created: confirm uncached.
		fresh, freshListed := c.machines(ctx, ownerNamespaces(candidates), false)
		for _, inst := range orphanInstances(candidates, fresh, freshListed, c.clock.Now(), c.opts.Period) {
			if budget == 0 {
				OrphanInstancesDeferredTotal.Inc()
				log.Info("orphan instance left for a later pass: this pass reached --machine-safety-orphan-vms-max-deletions",
					"providerID", inst.ProviderID, "name", inst.Name, "owner", inst.Owner.String(), "max", c.opts.MaxDeletions)
				continue
			}
			budget--
			if c.opts.DryRun {
				OrphanInstancesDryRunTotal.Inc()
				log.Info("dry run: would delete an orphan instance: its Machine is gone", "providerID", inst.ProviderID, "name", inst.Name,
					"owner", inst.Owner.String(), "createdAt", inst.CreatedAt)
				c.event(inst, corev1.EventTypeWarning, EventOrphanInstanceDryRun,
					"Dry run (--machine-safety-orphan-vms-dry-run): would delete instance %s (%s): it carries this Machine's ownership mark %s and no such Machine exists",
					inst.ProviderID, inst.Name, inst.Owner)
				continue
			}
			if err := l.DeleteInstance(ctx, inst); err != nil {
				errs = append(errs, fmt.Errorf("deleting orphan instance %s: %w", inst.ProviderID, err))
				continue
			}
			OrphanInstancesDeletedTotal.Inc()
			log.Info("deleted an orphan instance: its Machine is gone", "providerID", inst.ProviderID, "name", inst.Name,
				"owner", inst.Owner.String(), "createdAt", inst.CreatedAt)
			c.event(inst, corev1.EventTypeNormal, EventOrphanInstanceDeleted,
				"Deleted instance %s (%s): it carries this Machine's ownership mark %s and no such Machine exists", inst.ProviderID, inst.Name, inst.Owner)
		}
	}
	return errors.Join(errs...)
}

// machines lists the Machines of namespaces (cached for the collector's own namespace when asked), and says
// which namespaces were listed: an unlisted one (forbidden, an error) keeps its instances.
func (c *OrphanCollector) machines(ctx context.Context, namespaces []string, cached bool) ([]*machinev1beta1.Machine, map[string]bool) {
	var out []*machinev1beta1.Machine
	listed := map[string]bool{}
	for _, ns := range namespaces {
		r := c.opts.APIReader
		if cached && (c.opts.Namespace == "" || ns == c.opts.Namespace) {
			r = c.opts.Client
		}
		ms, err := listMachines(ctx, r, client.InNamespace(ns))
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("not judging the instances marked with namespace "+ns+": its Machines cannot be listed", "err", err)
			continue
		}
		out, listed[ns] = append(out, ms...), true
	}
	return out, listed
}

// event records an event on the Machine the instance's mark names (gone: that is why it is an orphan).
func (c *OrphanCollector) event(inst provider.Instance, eventType, reason, note string, args ...any) {
	if c.opts.Recorder == nil {
		return
	}
	gone := &machinev1beta1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: machinev1beta1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Owner.Namespace, Name: inst.Owner.Name, UID: inst.Owner.UID},
	}
	c.opts.Recorder.Eventf(gone, nil, eventType, reason, "DeleteOrphan", note, args...)
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
