// Package collector serves OpenShift's Machine and MachineSet series from the
// informer cache at scrape time. See docs/contract.md, "metrics".
package collector

import (
	"cmp"
	"context"
	"errors"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Values of the kind label of mapi_mao_collector_up (OpenShift's).
const (
	KindMachines    = "mapi_machine_items"
	KindMachineSets = "mapi_machineset_items"
)

var (
	machineCountDesc = prometheus.NewDesc("mapi_machine_items",
		"Number of Machines in the Machine API namespace.", nil, nil)
	machineSetCountDesc = prometheus.NewDesc("mapi_machineset_items",
		"Number of MachineSets in the Machine API namespace.", nil, nil)
	machineInfoDesc = prometheus.NewDesc("mapi_machine_created_timestamp_seconds",
		"Creation time (Unix seconds) of a Machine that has a phase, labelled with its providerID, node and phase.",
		[]string{"name", "namespace", "spec_provider_id", "node", "api_version", "phase"}, nil)
	machineSetInfoDesc = prometheus.NewDesc("mapi_machineset_created_timestamp_seconds",
		"Creation time (Unix seconds) of a MachineSet.",
		[]string{"name", "namespace", "api_version"}, nil)
	statusReplicasDesc = prometheus.NewDesc("mapi_machine_set_status_replicas",
		"status.replicas of a MachineSet.", []string{"name", "namespace"}, nil)
	statusAvailableDesc = prometheus.NewDesc("mapi_machine_set_status_replicas_available",
		"status.availableReplicas of a MachineSet.", []string{"name", "namespace"}, nil)
	statusReadyDesc = prometheus.NewDesc("mapi_machine_set_status_replicas_ready",
		"status.readyReplicas of a MachineSet.", []string{"name", "namespace"}, nil)
	specReplicasDesc = prometheus.NewDesc("mapi_machine_set_spec_replicas",
		"spec.replicas of a MachineSet (the desired number of Machines).", []string{"name", "namespace"}, nil)
	collectorUpDesc = prometheus.NewDesc("mapi_mao_collector_up",
		"1 when the operator could list the kind of objects its Machine API series are computed from, else 0.",
		[]string{"kind"}, nil)
)

// Source is where the collector reads: the operator manager's cache.
type Source interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

// Collector is a prometheus.Collector and a manager.Runnable that registers
// it while the manager runs.
type Collector struct {
	source    Source
	namespace string
	timeout   time.Duration // of one scrape's reads
	warmup    time.Duration // how often Start retries starting the informers
}

// New returns a collector of the Machines and MachineSets of namespace.
func New(source Source, namespace string) *Collector {
	return &Collector{source: source, namespace: namespace, timeout: 10 * time.Second, warmup: 10 * time.Second}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{machineCountDesc, machineSetCountDesc, machineInfoDesc, machineSetInfoDesc,
		statusReplicasDesc, statusAvailableDesc, statusReadyDesc, specReplicasDesc, collectorUpDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.collectMachines(ctx, ch)
	c.collectMachineSets(ctx, ch)
}

func (c *Collector) collectMachines(ctx context.Context, ch chan<- prometheus.Metric) {
	list := &machinev1beta1.MachineList{}
	if !c.list(ctx, ch, &machinev1beta1.Machine{}, list, KindMachines, machineCountDesc) {
		return
	}
	for i := range list.Items {
		m := &list.Items[i]
		// As on OpenShift, only Machines with a phase.
		if m.Status.Phase == nil || *m.Status.Phase == "" {
			continue
		}
		providerID, node := ptr.Deref(m.Spec.ProviderID, ""), ""
		if m.Status.NodeRef != nil {
			node = m.Status.NodeRef.Name
		}
		ch <- gauge(machineInfoDesc, float64(m.CreationTimestamp.Unix()),
			m.Name, m.Namespace, providerID, node, apiVersion(m.APIVersion), *m.Status.Phase)
	}
}

func (c *Collector) collectMachineSets(ctx context.Context, ch chan<- prometheus.Metric) {
	list := &machinev1beta1.MachineSetList{}
	if !c.list(ctx, ch, &machinev1beta1.MachineSet{}, list, KindMachineSets, machineSetCountDesc) {
		return
	}
	for i := range list.Items {
		ms := &list.Items[i]
		ch <- gauge(machineSetInfoDesc, float64(ms.CreationTimestamp.Unix()), ms.Name, ms.Namespace, apiVersion(ms.APIVersion))
		ch <- gauge(statusReplicasDesc, float64(ms.Status.Replicas), ms.Name, ms.Namespace)
		ch <- gauge(statusAvailableDesc, float64(ms.Status.AvailableReplicas), ms.Name, ms.Namespace)
		ch <- gauge(statusReadyDesc, float64(ms.Status.ReadyReplicas), ms.Name, ms.Namespace)
		if ms.Spec.Replicas != nil {
			ch <- gauge(specReplicasDesc, float64(*ms.Spec.Replicas), ms.Name, ms.Namespace)
		}
	}
}

// list reads from a synced informer only (an unsynced one blocks the scrape),
// emits the up and count series, and says whether it could.
func (c *Collector) list(ctx context.Context, ch chan<- prometheus.Metric, obj client.Object, list client.ObjectList,
	kind string, count *prometheus.Desc) bool {
	inf, err := c.source.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err == nil && !inf.HasSynced() {
		err = errors.New("the informer has not synced")
	}
	if err == nil {
		err = c.source.List(ctx, list, client.InNamespace(c.namespace))
	}
	if err != nil {
		log.FromContext(ctx).V(2).Info("metrics: cannot list "+kindNames[kind], "err", err)
		ch <- gauge(collectorUpDesc, 0, kind)
		return false
	}
	ch <- gauge(collectorUpDesc, 1, kind)
	ch <- gauge(count, float64(meta.LenList(list)))
	return true
}

var kindNames = map[string]string{KindMachines: "Machines", KindMachineSets: "MachineSets"}

// Start registers the collector (replacing an earlier one) until the manager
// stops, and starts the informers (retrying until the CRDs exist).
func (c *Collector) Start(ctx context.Context) error {
	ctrlmetrics.Registry.Unregister(c)
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		return err
	}
	defer ctrlmetrics.Registry.Unregister(c)
	logger := log.FromContext(ctx).WithName("metrics-collector")
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		_, machinesErr := c.source.GetInformer(ctx, &machinev1beta1.Machine{}, cache.BlockUntilSynced(false))
		_, setsErr := c.source.GetInformer(ctx, &machinev1beta1.MachineSet{}, cache.BlockUntilSynced(false))
		if err := errors.Join(machinesErr, setsErr); err != nil {
			logger.Info("cannot watch Machines and MachineSets yet; retrying", "err", err)
			return
		}
		logger.V(1).Info("watching Machines and MachineSets", "namespace", c.namespace)
		<-ctx.Done()
	}, c.warmup)
	return nil
}

// NeedLeaderElection is false: every replica serves its metrics.
func (c *Collector) NeedLeaderElection() bool { return false }

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// apiVersion is the object's, or the only one (cached objects may lack it).
func apiVersion(v string) string { return cmp.Or(v, machinev1beta1.GroupVersion.String()) }

// Transform strips cached Machines and MachineSets to what the collector and
// the install gate read (a few hundred bytes each); others pass unchanged.
func Transform(in any) (any, error) {
	switch o := in.(type) {
	case *machinev1beta1.Machine:
		out := &machinev1beta1.Machine{TypeMeta: o.TypeMeta, ObjectMeta: strippedMeta(o.ObjectMeta)}
		out.Labels = o.Labels
		out.Spec.ProviderID = o.Spec.ProviderID
		out.Status.Phase = o.Status.Phase
		if o.Status.NodeRef != nil {
			out.Status.NodeRef = &corev1.ObjectReference{Kind: o.Status.NodeRef.Kind, Name: o.Status.NodeRef.Name, UID: o.Status.NodeRef.UID}
		}
		return out, nil
	case *machinev1beta1.MachineSet:
		out := &machinev1beta1.MachineSet{TypeMeta: o.TypeMeta, ObjectMeta: strippedMeta(o.ObjectMeta)}
		out.Spec = machinev1beta1.MachineSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector}
		out.Status = machinev1beta1.MachineSetStatus{Replicas: o.Status.Replicas, ReadyReplicas: o.Status.ReadyReplicas,
			AvailableReplicas: o.Status.AvailableReplicas}
		return out, nil
	}
	return in, nil
}

// strippedMeta keeps the identity, version and lifecycle of an object.
func strippedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}
