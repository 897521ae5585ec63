package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWithOwner: objects Prune may delete get the owner label (on a copy);
// CRDs and Namespaces, which installations share, and an Applier without
// an owner leave objects as they are.
func TestWithOwner(t *testing.T) {
	role := func() client.Object {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"a": "b"}}}
	}
	for _, tc := range []struct {
		name  string
		owner string
		obj   client.Object
		gk    schema.GroupKind
		want  map[string]string
	}{
		{"ClusterRole", "ns-a", role(), schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"},
			map[string]string{"a": "b", OwnerLabel: "ns-a"}},
		{"no owner", "", role(), schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRole"},
			map[string]string{"a": "b"}},
		{"CRD", "ns-a", &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
			schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, nil},
		{"Namespace", "ns-a", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
			schema.GroupKind{Kind: "Namespace"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Applier{owner: tc.owner}
			before := tc.obj.DeepCopyObject().(client.Object)
			got := a.withOwner(tc.obj, tc.gk).GetLabels()
			if len(got) != len(tc.want) {
				t.Fatalf("labels %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("labels %v, want %v", got, tc.want)
				}
			}
			if len(tc.obj.GetLabels()) != len(before.GetLabels()) {
				t.Errorf("the argument was modified: %v", tc.obj.GetLabels())
			}
		})
	}
}
