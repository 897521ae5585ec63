package config

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestForeignManagers(t *testing.T) {
	entry := func(manager, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource}
	}
	crd := func(entries ...metav1.ManagedFieldsEntry) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: NodeMaintenanceCRDName, ManagedFields: entries}}
	}
	tests := []struct {
		name string
		obj  *metav1.PartialObjectMetadata
		want []string
	}{
		{"absent: ours to install", nil, nil},
		{"applied by this operator", crd(entry("machine-api-operator", ""), entry("kube-apiserver", "status")), nil},
		{"this operator reverted a foreign edit", crd(entry("kubectl-edit", ""), entry("machine-api-operator-revert", "")), nil},
		{"OLM's catalog operator", crd(entry("catalog", ""), entry("kube-apiserver", "status")), []string{"catalog"}},
		{"several others, sorted, once each", crd(entry("olm", ""), entry("catalog", ""), entry("olm", "")), []string{"catalog", "olm"}},
		{"no record of who wrote it", crd(), []string{"unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ForeignManagers(tt.obj); !slices.Equal(got, tt.want) {
				t.Errorf("ForeignManagers = %v, want %v", got, tt.want)
			}
		})
	}
}
