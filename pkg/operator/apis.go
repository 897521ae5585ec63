package operator

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/certs"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// optionalAPI is a kind served by a CRD the cluster may not have yet. See
// docs/architecture.md, "Missing CRDs".
type optionalAPI struct {
	crd    string // the CRD's name
	gvk    schema.GroupVersionKind
	obj    client.Object // watched and read; nil when only presence matters
	byName string        // restricts the informer to one object ("" = all)
	// required: the Machine API is not served without it (reported missing).
	required bool
	// ownCRD: the operator installs it itself, unless the CVO does.
	ownCRD        bool
	openShiftOnly bool // no vanilla deploy path installs its CRD
}

func (a optionalAPI) kind() string { return a.gvk.Kind }

var configGV = configv1.GroupVersion

// serviceCAGVK is the service-ca operator's API: served means it issues the
// serving certificates.
var serviceCAGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "ServiceCA"}

// optionalAPIs lists every CRD-backed kind the operator reads or watches.
var optionalAPIs = []optionalAPI{
	{crd: "infrastructures.config.openshift.io", gvk: configGV.WithKind("Infrastructure"), obj: &configv1.Infrastructure{}, byName: config.ClusterConfigName, required: true},
	{crd: "proxies.config.openshift.io", gvk: configGV.WithKind("Proxy"), obj: &configv1.Proxy{}, byName: config.ClusterConfigName},
	{crd: "featuregates.config.openshift.io", gvk: configGV.WithKind("FeatureGate"), obj: &configv1.FeatureGate{}, byName: config.ClusterConfigName},
	{crd: "apiservers.config.openshift.io", gvk: configGV.WithKind("APIServer"), obj: &configv1.APIServer{}, byName: config.ClusterConfigName, openShiftOnly: true},
	{crd: "clusteroperators.config.openshift.io", gvk: configGV.WithKind("ClusterOperator"), obj: &configv1.ClusterOperator{}, byName: config.ClusterOperatorName, required: true},
	{crd: "clusterversions.config.openshift.io", gvk: configGV.WithKind("ClusterVersion"), obj: &configv1.ClusterVersion{}, byName: config.ClusterVersionName},
	{crd: "machines.machine.openshift.io", gvk: machinev1beta1.SchemeGroupVersion.WithKind("Machine"), obj: &machinev1beta1.Machine{}, required: true, ownCRD: true},
	{crd: "machinesets.machine.openshift.io", gvk: machinev1beta1.SchemeGroupVersion.WithKind("MachineSet"), obj: &machinev1beta1.MachineSet{}, required: true, ownCRD: true},
	{crd: certs.ServiceCAResource + "." + serviceCAGVK.Group, gvk: serviceCAGVK, openShiftOnly: true},
}

// watchedCRDs are the CRDs whose events bring a sync (the NodeMaintenance
// CRD's owner decides what is rendered).
func watchedCRDs() []string {
	names := []string{config.NodeMaintenanceCRDName}
	for _, a := range optionalAPIs {
		names = append(names, a.crd)
	}
	return names
}

// servedAPIs tells, per kind, whether the API server serves it.
type servedAPIs map[string]bool

// serves tells whether the kind of obj is served (non-optional kinds always are).
func (s servedAPIs) serves(obj client.Object) bool {
	for _, a := range optionalAPIs {
		if a.obj != nil && reflect.TypeOf(a.obj) == reflect.TypeOf(obj) {
			return s[a.kind()]
		}
	}
	return true
}

// missing lists the CRDs of the required kinds not served, the ones the
// operator installs itself only when includeOwn.
func (s servedAPIs) missing(includeOwn bool) []string {
	var out []string
	for _, a := range optionalAPIs {
		if a.required && !s[a.kind()] && (includeOwn || !a.ownCRD) {
			out = append(out, a.crd)
		}
	}
	return out
}

// apiTracker follows which optional APIs the cluster serves and starts the
// watch of a kind once its CRD is served (no restart needed).
type apiTracker struct {
	crds    cache.Cache // CRD metadata: an absent CRD costs no request
	mapper  meta.RESTMapper
	watched map[string]bool // kinds whose watch has started
	watch   func(obj client.Object) error
}

// crdMeta is the metadata-only CRD object the tracker reads and watches.
func crdMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return m
}

// newCRDCache returns the metadata-only cache of the CRDs; managedFields
// (as large as a schema) are kept only for the watched ones.
func newCRDCache(restCfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	watched := watchedCRDs()
	opts.ByObject = map[client.Object]cache.ByObject{crdMeta(): {Transform: func(in any) (any, error) {
		if m, ok := in.(*metav1.PartialObjectMetadata); ok && !slices.Contains(watched, m.Name) {
			m.ManagedFields = nil
			m.Annotations = nil
		}
		return in, nil
	}}}
	c, err := cache.New(restCfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the CRD cache: %w", err)
	}
	return c, nil
}

// served tells whether the API server serves gvk; NoMatch means no.
func served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || meta.IsNoMatchError(err) {
		return err == nil, nil
	}
	return false, fmt.Errorf("looking up %s: %w", gvk, err)
}

// servedAtStart asks which optional APIs are served, before the cache is built.
func servedAtStart(mapper meta.RESTMapper) (servedAPIs, error) {
	s := servedAPIs{}
	for _, a := range optionalAPIs {
		ok, err := served(mapper, a.gvk)
		if err != nil {
			return nil, err
		}
		s[a.kind()] = ok
	}
	return s, nil
}

// crd returns the cached metadata of the CRD name, nil if it does not exist.
func (t *apiTracker) crd(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	m := crdMeta()
	err := t.crds.Get(ctx, client.ObjectKey{Name: name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	return m, nil
}

// observe returns which optional APIs are served now and starts the watches
// of the ones that just became served. A CRD not Established yet is missing.
func (t *apiTracker) observe(ctx context.Context) (servedAPIs, error) {
	s := servedAPIs{}
	for _, a := range optionalAPIs {
		crd, err := t.crd(ctx, a.crd)
		if err != nil {
			return nil, err
		}
		if crd == nil {
			s[a.kind()] = false
			continue
		}
		ok, err := served(t.mapper, a.gvk)
		if err != nil {
			return nil, err
		}
		s[a.kind()] = ok
		if !ok || a.obj == nil || t.watched[a.kind()] {
			continue
		}
		if err := t.watch(a.obj); err != nil {
			return nil, fmt.Errorf("watching %s: %w", a.crd, err)
		}
		t.watched[a.kind()] = true
		log.FromContext(ctx).Info("CRD installed; watching it", "crd", a.crd)
	}
	return s, nil
}

// missingMessage says which CRDs the operator waits for, "" when none.
func missingMessage(missing []string, openShift bool) string {
	if len(missing) == 0 {
		return ""
	}
	who := "install them (on vanilla Kubernetes: kustomize build . | kubectl apply --server-side -f -)"
	if openShift {
		who = "the cluster version operator installs them from the release payload"
	}
	return fmt.Sprintf("CRDs not installed: %s; %s", strings.Join(missing, ", "), who)
}
