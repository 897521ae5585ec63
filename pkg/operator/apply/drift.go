package apply

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// typeConverter types objects with the server-side apply schemas; an unknown
// kind is a custom resource without a schema.
type typeConverter []managedfields.TypeConverter

func newTypeConverter(s *runtime.Scheme) typeConverter {
	c := typeConverter{applyconfigurations.NewTypeConverter(s)}
	if p, err := apiextensionsTypes(); err == nil {
		c = append(c, managedfields.NewSchemeTypeConverter(s, p))
	}
	return c
}

// apiextensionsTypes parses the CRD type's OpenAPI definitions once (client-go
// has no schema for them).
var apiextensionsTypes = sync.OnceValues(func() (*typed.Parser, error) {
	defs := apiextensionsopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + name)
	})
	models := make(map[string]*spec.Schema, len(defs))
	for name, def := range defs {
		models[name] = &def.Schema
	}
	sc, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		return nil, err
	}
	return &typed.Parser{Schema: smdschema.Schema{Types: sc.Types}}, nil
})

var deducedTypes = managedfields.NewDeducedTypeConverter()

func (c typeConverter) toTyped(u *unstructured.Unstructured, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tv, err := c.converterFor(u.GroupVersionKind()).ObjectToTyped(u, opts...)
	if err != nil {
		return nil, fmt.Errorf("converting %s to a typed value: %w", u.GroupVersionKind(), err)
	}
	return tv, nil
}

// converterFor returns the first converter that knows gvk, else the deduced one.
func (c typeConverter) converterFor(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	empty := &unstructured.Unstructured{Object: map[string]any{}}
	empty.SetGroupVersionKind(gvk)
	for _, tc := range c {
		if _, err := tc.ObjectToTyped(empty); err == nil {
			return tc
		}
	}
	return deducedTypes
}

// fieldSet returns the fields u sets, as server-side apply records them.
func (c typeConverter) fieldSet(u *unstructured.Unstructured) (*fieldpath.Set, error) {
	tv, err := c.toTyped(u)
	if err != nil {
		return nil, err
	}
	return tv.ToFieldSet()
}

// notRecorded are the paths server-side apply never records in managedFields.
var notRecorded = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
)

// drift is what the check found wrong with a live object.
type drift struct {
	reapply   string         // why to apply again ("" when our apply is intact)
	foreign   *fieldpath.Set // fields others set in our part, to remove
	foreignBy []string       // the managers that set them (for logs)
}

func (d drift) none() bool { return d.reapply == "" && d.foreign.Empty() }

func (d drift) String() string {
	var parts []string
	if d.reapply != "" {
		parts = append(parts, d.reapply)
	}
	if !d.foreign.Empty() {
		parts = append(parts, fmt.Sprintf("fields set by %s: %s", strings.Join(d.foreignBy, ", "), firstPaths(d.foreign, 3)))
	}
	return strings.Join(parts, "; ")
}

// checkDrift decides from the hash annotation and managedFields (no values) whether
// live must be written. See docs/architecture.md, "How the drift check decides".
func checkDrift(desired *unstructured.Unstructured, desiredSet *fieldpath.Set, live metav1.Object, fieldManager string) (drift, error) {
	var d drift
	entries := live.GetManagedFields()
	switch own := ownEntry(entries, fieldManager); {
	case live.GetAnnotations()[AppliedHashAnnotation] != desired.GetAnnotations()[AppliedHashAnnotation]:
		d.reapply = "the desired object changed since it was last applied"
	case own == nil:
		d.reapply = fmt.Sprintf("no fields are applied by %s", fieldManager)
	case own.APIVersion != desired.GetAPIVersion():
		d.reapply = fmt.Sprintf("the fields were applied as %s, not %s", own.APIVersion, desired.GetAPIVersion())
	default:
		ours, err := decodeSet(own)
		if err != nil {
			return d, err
		}
		if p, ok := firstMissing(desiredSet, ours); ok {
			d.reapply = fmt.Sprintf("%s is no longer applied by %s (%s)", p, fieldManager, changedBy(entries, p, fieldManager))
		}
	}
	var err error
	d.foreign, d.foreignBy, err = foreignFields(desired.GroupVersionKind().GroupKind(), entries, fieldManager)
	return d, err
}

// firstMissing returns the first path of want that ours neither owns, nor holds
// an atomic field around, nor (atomic here, granular on the server) owns inside.
func firstMissing(want, ours *fieldpath.Set) (fieldpath.Path, bool) {
	var missing fieldpath.Path
	want.Difference(notRecorded).Iterate(func(p fieldpath.Path) {
		if missing == nil && !ours.Has(p) && !hasAncestor(ours, p, true) && !hasOwnedDescendant(ours, p) {
			missing = p.Copy()
		}
	})
	return missing, missing != nil
}

// foreignFields returns the fields of our part (see othersMaySet) that other
// managers set and we own neither at nor inside, and those managers' names.
func foreignFields(gk schema.GroupKind, entries []metav1.ManagedFieldsEntry, fieldManager string) (*fieldpath.Set, []string, error) {
	ours := &fieldpath.Set{}
	for i := range entries {
		if isOurs(&entries[i], fieldManager) {
			s, err := decodeSet(&entries[i])
			if err != nil {
				return nil, nil, err
			}
			ours = ours.Union(s)
		}
	}
	foreign := &fieldpath.Set{}
	var by []string
	for i := range entries {
		e := &entries[i]
		if isOurs(e, fieldManager) {
			continue
		}
		theirs, err := decodeSet(e)
		if err != nil {
			return nil, nil, err
		}
		found := false
		theirs.Iterate(func(p fieldpath.Path) {
			if othersMaySet(gk, p) || ours.Has(p) || hasOwnedDescendant(ours, p) {
				return
			}
			foreign.Insert(p.Copy())
			found = true
		})
		if found && !slices.Contains(by, e.Manager) {
			by = append(by, e.Manager)
		}
	}
	return foreign, by, nil
}

// removableFirst returns the foreign fields desired does not set (nor inside):
// removed before the apply, as one may stand where ours goes (Service ports).
func removableFirst(foreign, desiredSet *fieldpath.Set) *fieldpath.Set {
	out := &fieldpath.Set{}
	foreign.Iterate(func(p fieldpath.Path) {
		if !desiredSet.Has(p) && !hasOwnedDescendant(desiredSet, p) {
			out.Insert(p.Copy())
		}
	})
	return out
}

var (
	serviceAccountKind = schema.GroupKind{Kind: "ServiceAccount"}
	crdKind            = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
)

// othersMaySet: metadata, status, an injected webhook caBundle, a ServiceAccount's
// (imagePull)secrets; everything else of gk is the operator's product.
func othersMaySet(gk schema.GroupKind, p fieldpath.Path) bool {
	if len(p) == 0 || p[0].FieldName == nil {
		return false
	}
	switch top := *p[0].FieldName; {
	case top == "metadata", top == "status":
		return true
	case gk == serviceAccountKind && (top == "secrets" || top == "imagePullSecrets"):
		return true
	}
	n := len(p)
	if n >= 2 && p[n-2:].String() == ".clientConfig.caBundle" {
		return strings.HasSuffix(gk.Kind, "WebhookConfiguration") || gk == crdKind
	}
	return false
}

// RevertManagerSuffix is appended to the field manager for the updates that
// remove what others added; the defaults they bring back count as ours.
const RevertManagerSuffix = "-revert"

// isApplied reports whether e is fieldManager's apply to the main resource.
func isApplied(e *metav1.ManagedFieldsEntry, fieldManager string) bool {
	return e.Manager == fieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// isOurs: fieldManager's apply or its revert manager's update, main resource.
func isOurs(e *metav1.ManagedFieldsEntry, fieldManager string) bool {
	return isApplied(e, fieldManager) ||
		e.Manager == fieldManager+RevertManagerSuffix && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == ""
}

// ownEntry returns fieldManager's apply entry, nil if there is none.
func ownEntry(entries []metav1.ManagedFieldsEntry, fieldManager string) *metav1.ManagedFieldsEntry {
	if i := slices.IndexFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return isApplied(&e, fieldManager) }); i >= 0 {
		return &entries[i]
	}
	return nil
}

func decodeSet(e *metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := &fieldpath.Set{}
	raw := e.FieldsV1.GetRawBytes()
	if len(raw) == 0 {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("decoding the managed fields of %s: %w", e.Manager, err)
	}
	return s, nil
}

// hasAncestor reports whether s has a member enclosing p; with whole, only one
// owned as a whole (a member with nothing recorded inside it).
func hasAncestor(s *fieldpath.Set, p fieldpath.Path, whole bool) bool {
	for i := 1; i < len(p); i++ {
		if s.Has(p[:i]) && (!whole || !hasOwnedDescendant(s, p[:i])) {
			return true
		}
	}
	return false
}

func hasOwnedDescendant(s *fieldpath.Set, p fieldpath.Path) bool {
	for _, pe := range p {
		s = s.WithPrefix(pe)
		if s.Empty() {
			return false
		}
	}
	return true
}

// changedBy says who owns p now, for logs.
func changedBy(entries []metav1.ManagedFieldsEntry, p fieldpath.Path, fieldManager string) string {
	for i := range entries {
		e := &entries[i]
		if isOurs(e, fieldManager) {
			continue
		}
		if s, err := decodeSet(e); err == nil && s.Has(p) {
			return "changed by " + e.Manager
		}
	}
	return "removed"
}

func firstPaths(s *fieldpath.Set, n int) string {
	var out []string
	total := 0
	s.Iterate(func(p fieldpath.Path) {
		if hasAncestor(s, p, false) {
			return
		}
		total++
		if len(out) < n {
			out = append(out, p.String())
		}
	})
	if total > n {
		out = append(out, fmt.Sprintf("and %d more", total-n))
	}
	return strings.Join(out, ", ")
}

// withoutForeign returns live without the foreign fields nor others' claims on
// them (a default comes back as nobody's), keeping duplicate list keys.
func (c typeConverter) withoutForeign(live *unstructured.Unstructured, foreign *fieldpath.Set, fieldManager string) (*unstructured.Unstructured, error) {
	tv, err := c.toTyped(live, typed.AllowDuplicates)
	if err != nil {
		return nil, err
	}
	m, ok := tv.RemoveItems(foreign).AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("removing fields from %s: not an object", live.GroupVersionKind())
	}
	out := &unstructured.Unstructured{Object: m}
	var entries []metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if isOurs(&e, fieldManager) {
			entries = append(entries, e)
			continue
		}
		s, err := decodeSet(&e)
		if err != nil {
			return nil, err
		}
		kept := s.RecursiveDifference(foreign)
		if kept.Equals(s) {
			entries = append(entries, e)
			continue
		}
		if kept.Empty() {
			continue
		}
		raw, err := kept.ToJSON()
		if err != nil {
			return nil, err
		}
		e.FieldsV1 = metav1.NewFieldsV1(string(raw))
		entries = append(entries, e)
	}
	out.SetManagedFields(entries)
	return out, nil
}
