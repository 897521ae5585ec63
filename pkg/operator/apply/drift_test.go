package apply

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

const testManager = "mao"

func testTypes(s *runtime.Scheme) typeConverter { return newTypeConverter(s) }

func testDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ctrl", Namespace: "ns", Labels: map[string]string{"app": "ctrl"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctrl"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ctrl"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "c",
						Image: "img:1",
						Args:  []string{"--a", "--b"},
						Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
					}},
				},
			},
		},
	}
}

// path builds a field path; a map[string]any element is a list item key.
func path(parts ...any) fieldpath.Path {
	var out []any
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			var kv []any
			for k, v := range m {
				kv = append(kv, k, v)
			}
			out = append(out, fieldpath.KeyByFields(kv...))
			continue
		}
		out = append(out, p)
	}
	return fieldpath.MakePathOrDie(out...)
}

var (
	container = path("spec", "template", "spec", "containers", map[string]any{"name": "c"})
	evil      = path("spec", "template", "spec", "containers", map[string]any{"name": "evil"})
)

func under(p fieldpath.Path, rest ...any) fieldpath.Path {
	return append(p.Copy(), path(rest...)...)
}

func entry(t *testing.T, manager string, op metav1.ManagedFieldsOperationType, s *fieldpath.Set) metav1.ManagedFieldsEntry {
	t.Helper()
	raw, err := s.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
}

// fixture returns the desired Deployment, its applied field set, and a live
// object as the server has it right after the apply: the hash annotation
// and one managedFields entry of testManager owning exactly the set.
func fixture(t *testing.T) (*unstructured.Unstructured, *fieldpath.Set, *unstructured.Unstructured) {
	t.Helper()
	s := scheme.New()
	desired, err := Desired(testDeployment(), s)
	if err != nil {
		t.Fatal(err)
	}
	set, err := testTypes(s).fieldSet(desired)
	if err != nil {
		t.Fatal(err)
	}
	live := desired.DeepCopy()
	live.SetManagedFields([]metav1.ManagedFieldsEntry{entry(t, testManager, metav1.ManagedFieldsOperationApply, set.Difference(notRecorded))})
	return desired, set, live
}

func TestFieldSetIsWhatTheServerRecords(t *testing.T) {
	_, set, _ := fixture(t)
	for _, p := range []fieldpath.Path{
		under(container, "image"),
		under(container, "args"), // atomic: one field
		under(container, "env", map[string]any{"name": "B"}, "value"),
		path("metadata", "labels", "app"),
		path("metadata", "annotations", AppliedHashAnnotation),
	} {
		if !set.Has(p) {
			t.Errorf("set lacks %s:\n%s", p, set)
		}
	}
	if set.Has(under(container, "args", 0)) || set.Has(path("status")) {
		t.Errorf("unexpected members:\n%s", set)
	}
}

func TestCheckDrift(t *testing.T) {
	withEntries := func(t *testing.T, live *unstructured.Unstructured, es ...metav1.ManagedFieldsEntry) {
		live.SetManagedFields(append(live.GetManagedFields(), es...))
	}
	ownSet := func(t *testing.T, live *unstructured.Unstructured) *fieldpath.Set {
		s, err := decodeSet(ownEntry(live.GetManagedFields(), testManager))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	setOwn := func(t *testing.T, live *unstructured.Unstructured, s *fieldpath.Set) {
		es := live.GetManagedFields()
		es[0] = entry(t, testManager, metav1.ManagedFieldsOperationApply, s)
		live.SetManagedFields(es)
	}

	tests := []struct {
		name        string
		mutate      func(t *testing.T, live *unstructured.Unstructured)
		reapply     string   // substring of the reason; "" = none
		foreign     []string // paths, as fieldpath prints them
		foreignBy   []string
		gk          *schema.GroupKind
		wantNoDrift bool
	}{
		{name: "as applied", wantNoDrift: true},
		{
			name: "desired object changed",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				live.SetAnnotations(map[string]string{AppliedHashAnnotation: "old"})
			},
			reapply: "desired object changed",
		},
		{
			name:    "never applied by us",
			mutate:  func(t *testing.T, live *unstructured.Unstructured) { live.SetManagedFields(nil) },
			reapply: "no fields are applied by mao",
		},
		{
			name: "applied as another version",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				es := live.GetManagedFields()
				es[0].APIVersion = "apps/v1beta1"
				live.SetManagedFields(es)
			},
			reapply: "applied as apps/v1beta1",
		},
		{
			name: "argument appended (atomic list taken over)",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				args := under(container, "args")
				setOwn(t, live, ownSet(t, live).Difference(fieldpath.NewSet(args)))
				withEntries(t, live, entry(t, "kubectl-patch", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(args)))
			},
			reapply: `.args is no longer applied by mao (changed by kubectl-patch)`,
			// Foreign too, but the desired object sets it: the forced apply
			// takes it over (see removableFirst).
			foreign:   []string{under(container, "args").String()},
			foreignBy: []string{"kubectl-patch"},
		},
		{
			name: "env var removed",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				s := ownSet(t, live)
				b := under(container, "env", map[string]any{"name": "B"})
				setOwn(t, live, s.RecursiveDifference(fieldpath.NewSet(b)))
			},
			reapply: `[name="B"] is no longer applied by mao (removed)`,
		},
		{
			name: "container added",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				withEntries(t, live, entry(t, "kubectl-patch", metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(evil, under(evil, "name"), under(evil, "image"), under(evil, "terminationMessagePath"))))
			},
			foreign:   []string{evil.String()},
			foreignBy: []string{"kubectl-patch"},
		},
		{
			name: "env var added to our container",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				e := under(container, "env", map[string]any{"name": "EVIL"})
				withEntries(t, live, entry(t, "kubectl-patch", metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(e, under(e, "name"), under(e, "value"))))
			},
			foreign:   []string{under(container, "env", map[string]any{"name": "EVIL"}).String()},
			foreignBy: []string{"kubectl-patch"},
		},
		{
			name: "server default changed by another manager",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				withEntries(t, live, entry(t, "kubectl-edit", metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(under(container, "imagePullPolicy"), path("spec", "revisionHistoryLimit"))))
			},
			foreign:   []string{path("spec", "revisionHistoryLimit").String(), under(container, "imagePullPolicy").String()},
			foreignBy: []string{"kubectl-edit"},
		},
		{
			name: "an older operator's Update entry under our name is another manager",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				withEntries(t, live, entry(t, testManager, metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(under(container, "terminationMessagePath"))))
			},
			foreign:   []string{under(container, "terminationMessagePath").String()},
			foreignBy: []string{testManager},
		},
		{
			name: "defaults brought back by our revert are ours",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				withEntries(t, live, entry(t, testManager+RevertManagerSuffix, metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(under(container, "imagePullPolicy"))))
			},
			wantNoDrift: true,
		},
		{
			name: "others' metadata and status, and a claim on a list we fill",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				withEntries(t, live,
					entry(t, "kubectl-label", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(
						path("metadata", "labels", "team"), path("metadata", "annotations", "note"), path("metadata", "finalizers"))),
					entry(t, "kube-controller-manager", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(
						path("status", "replicas"), path("metadata", "annotations", "deployment.kubernetes.io/revision"))),
					// A create by another manager claims the env list itself
					// ("."); we own items in it.
					entry(t, "kubectl-create", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(
						under(container, "env"), under(container, "env", map[string]any{"name": "A"}), under(container, "image"))),
				)
			},
			wantNoDrift: true,
		},
		{
			name: "an empty struct we send does not hide what others set inside",
			mutate: func(t *testing.T, live *unstructured.Unstructured) {
				setOwn(t, live, ownSet(t, live).Union(fieldpath.NewSet(path("spec", "strategy"))))
				withEntries(t, live, entry(t, "kubectl-patch", metav1.ManagedFieldsOperationUpdate,
					fieldpath.NewSet(path("spec", "strategy", "type"))))
			},
			foreign:   []string{path("spec", "strategy", "type").String()},
			foreignBy: []string{"kubectl-patch"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired, set, live := fixture(t)
			if tc.mutate != nil {
				tc.mutate(t, live)
			}
			d, err := checkDrift(desired, set, live, testManager)
			if err != nil {
				t.Fatal(err)
			}
			if d.none() != tc.wantNoDrift {
				t.Errorf("none() = %v (%s)", d.none(), d)
			}
			if (tc.reapply == "") != (d.reapply == "") || !strings.Contains(d.reapply, tc.reapply) {
				t.Errorf("reapply = %q, want %q", d.reapply, tc.reapply)
			}
			var got []string
			d.foreign.Iterate(func(p fieldpath.Path) {
				if !hasAncestor(d.foreign, p, false) {
					got = append(got, p.String())
				}
			})
			slices.Sort(got)
			slices.Sort(tc.foreign)
			if !slices.Equal(got, tc.foreign) {
				t.Errorf("foreign = %v, want %v", got, tc.foreign)
			}
			if !slices.Equal(d.foreignBy, tc.foreignBy) {
				t.Errorf("foreignBy = %v, want %v", d.foreignBy, tc.foreignBy)
			}
			if d.String() == "" && !d.none() {
				t.Error("no description")
			}
		})
	}
}

func TestOthersMaySet(t *testing.T) {
	deployment := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	vwc := schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}
	mwc := schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}
	caBundle := path("webhooks", map[string]any{"name": "w"}, "clientConfig", "caBundle")
	tests := []struct {
		gk   schema.GroupKind
		p    fieldpath.Path
		want bool
	}{
		{deployment, path("metadata", "labels", "x"), true},
		{deployment, path("metadata", "annotations", "x"), true},
		{deployment, path("status", "replicas"), true},
		{deployment, path("spec", "template", "metadata", "labels", "x"), false},
		{deployment, path("spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt"), false},
		{deployment, path("spec", "paused"), false},
		{vwc, caBundle, true},
		{mwc, caBundle, true},
		{vwc, path("webhooks", map[string]any{"name": "w"}, "clientConfig", "url"), false},
		{vwc, path("webhooks", map[string]any{"name": "w"}), false},
		{deployment, path("spec", "clientConfig", "caBundle"), false},
		{crdKind, path("spec", "conversion", "webhook", "clientConfig", "caBundle"), true},
		{crdKind, path("spec", "conversion", "strategy"), false},
		{serviceAccountKind, path("imagePullSecrets"), true},
		{serviceAccountKind, path("secrets", map[string]any{"name": "x"}), true},
		{serviceAccountKind, path("automountServiceAccountToken"), false},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, path("rules"), false},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, path("aggregationRule"), false},
	}
	for _, tc := range tests {
		if got := othersMaySet(tc.gk, tc.p); got != tc.want {
			t.Errorf("othersMaySet(%s, %s) = %v, want %v", tc.gk, tc.p, got, tc.want)
		}
	}
}

func TestRemovableFirst(t *testing.T) {
	_, set, _ := fixture(t)
	image := under(container, "image")
	foreign := fieldpath.NewSet(evil, under(evil, "name"), image, under(container, "env"))
	got := removableFirst(foreign, set)
	want := fieldpath.NewSet(evil, under(evil, "name"))
	if !got.Equals(want) {
		t.Errorf("removableFirst = %s, want %s", got, want)
	}
}

func TestFirstMissingToleratesListTypeSkew(t *testing.T) {
	args := under(container, "args")
	// Our schema sees a list as granular, the server's as atomic.
	if _, ok := firstMissing(fieldpath.NewSet(under(args, map[string]any{"name": "x"})), fieldpath.NewSet(args)); ok {
		t.Error("a path inside an atomic field we own is missing")
	}
	// Our schema sees it as atomic, the server's as granular.
	if _, ok := firstMissing(fieldpath.NewSet(args), fieldpath.NewSet(under(args, map[string]any{"name": "x"}))); ok {
		t.Error("an atomic field we own items of is missing")
	}
	// A list item we own with fields inside does not cover a missing field.
	if p, ok := firstMissing(fieldpath.NewSet(container, under(container, "image")), fieldpath.NewSet(container, under(container, "name"))); !ok || !p.Equals(under(container, "image")) {
		t.Errorf("firstMissing = %s, %v", p, ok)
	}
}

func TestWithoutForeign(t *testing.T) {
	s := scheme.New()
	tc := testTypes(s)
	d := testDeployment()
	d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "EVIL", Value: "1"})
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "evil", Image: "evil:1"})
	d.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	d.Status.Replicas = 1
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{Object: m}
	live.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	live.SetResourceVersion("42")

	evilEnv := under(container, "env", map[string]any{"name": "EVIL"})
	tmp := under(container, "terminationMessagePath")
	ours := entry(t, testManager, metav1.ManagedFieldsOperationApply, fieldpath.NewSet(under(container, "image")))
	patch := entry(t, "kubectl-patch", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(
		evil, under(evil, "name"), under(evil, "image"), evilEnv, under(evilEnv, "name"), under(evilEnv, "value"),
		path("metadata", "labels", "team")))
	create := entry(t, "kubectl-create", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(tmp))
	status := entry(t, "kube-controller-manager", metav1.ManagedFieldsOperationUpdate, fieldpath.NewSet(path("status", "replicas")))
	status.Subresource = "status"
	live.SetManagedFields([]metav1.ManagedFieldsEntry{ours, patch, create, status})

	foreign, by, err := foreignFields(schema.GroupKind{Group: "apps", Kind: "Deployment"}, live.GetManagedFields(), testManager)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(by, []string{"kubectl-patch", "kubectl-create"}) {
		t.Errorf("foreignBy = %v", by)
	}
	out, err := tc.withoutForeign(live, foreign, testManager)
	if err != nil {
		t.Fatal(err)
	}
	got := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, got); err != nil {
		t.Fatal(err)
	}
	cs := got.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "c" || cs[0].Image != "img:1" || len(cs[0].Env) != 2 || cs[0].TerminationMessagePath != "" {
		t.Errorf("containers = %+v", cs)
	}
	if got.ResourceVersion != "42" || got.Labels["app"] != "ctrl" || got.Status.Replicas != 1 || out.GetKind() != "Deployment" {
		t.Errorf("kept fields lost: %+v", out.Object)
	}
	es := got.ManagedFields
	if len(es) != 3 || es[0].Manager != testManager || es[1].Manager != "kubectl-patch" || es[2].Manager != "kube-controller-manager" {
		t.Fatalf("managedFields = %v", es)
	}
	if es[0].FieldsV1.GetRawString() != ours.FieldsV1.GetRawString() || es[2].FieldsV1.GetRawString() != status.FieldsV1.GetRawString() {
		t.Error("entries without foreign fields changed")
	}
	left, err := decodeSet(&es[1])
	if err != nil {
		t.Fatal(err)
	}
	if !left.Equals(fieldpath.NewSet(path("metadata", "labels", "team"))) {
		t.Errorf("kubectl-patch keeps %s", left)
	}
}

func TestConverterFor(t *testing.T) {
	s := scheme.New()
	tc := testTypes(s)
	// A CRD is typed by the apiextensions schema (versions is an atomic
	// list there; a deduced type would make spec itself a member).
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": "widgets", "kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
		},
	}}
	set, err := tc.fieldSet(crd)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Has(path("spec", "versions")) || !set.Has(path("spec", "names", "kind")) || set.Has(path("spec")) {
		t.Errorf("CRD set:\n%s", set)
	}
	// Webhook configurations: webhooks keyed by name.
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "w"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com", AdmissionReviewVersions: []string{"v1"}}},
	}
	u, err := Desired(vwc, s)
	if err != nil {
		t.Fatal(err)
	}
	if set, err = tc.fieldSet(u); err != nil || !set.Has(path("webhooks", map[string]any{"name": "a.example.com"}, "name")) {
		t.Errorf("webhook set (%v):\n%s", err, set)
	}
	// An unknown kind: maps are structs, lists atomic.
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"},
		"spec":     map[string]any{"size": int64(1), "items": []any{map[string]any{"name": "a"}}},
	}}
	set, err = tc.fieldSet(widget)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Has(path("spec", "size")) || !set.Has(path("spec", "items")) || set.Has(path("spec", "items", 0)) {
		t.Errorf("widget set:\n%s", set)
	}
}
