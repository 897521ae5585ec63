package apply

import (
	"encoding/base64"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
)

func has(t *testing.T, u *unstructured.Unstructured, fields ...string) bool {
	t.Helper()
	_, found, err := unstructured.NestedFieldNoCopy(u.Object, fields...)
	if err != nil {
		t.Fatalf("%v: %v", fields, err)
	}
	return found
}

func TestDesired(t *testing.T) {
	s := scheme.New()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "d", Namespace: "ns", ResourceVersion: "5", UID: "u", Generation: 2,
			Labels:      map[string]string{"app": "d"},
			Annotations: map[string]string{AppliedHashAnnotation: "stale"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers: []corev1.Container{{
						Name: "c", Image: "img",
						Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"),
						}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
		Status: appsv1.DeploymentStatus{Replicas: 3},
	}
	before := dep.DeepCopy()
	u, err := Desired(dep, s)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before, dep) {
		t.Error("Desired modified its input")
	}
	if u.GetAPIVersion() != "apps/v1" || u.GetKind() != "Deployment" {
		t.Errorf("GVK = %s %s", u.GetAPIVersion(), u.GetKind())
	}
	if u.GetResourceVersion() != "" || u.GetUID() != "" || u.GetGeneration() != 0 || has(t, u, "metadata", "creationTimestamp") {
		t.Errorf("server metadata sent: %v", u.Object["metadata"])
	}
	if has(t, u, "status") {
		t.Error("status sent")
	}
	if u.GetLabels()[config.ManagedByLabel] != config.ManagedByValue || u.GetLabels()["app"] != "d" {
		t.Errorf("labels = %v", u.GetLabels())
	}
	hash := u.GetAnnotations()[AppliedHashAnnotation]
	if hash == "" || hash == "stale" {
		t.Errorf("hash annotation = %q", hash)
	}
	// Explicit zeros behind pointers are kept.
	if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); !has(t, u, "spec", "replicas") || r != 0 {
		t.Error("replicas: 0 was dropped")
	}
	if v, found, _ := unstructured.NestedBool(u.Object, "spec", "template", "spec", "automountServiceAccountToken"); !found || v {
		t.Error("automountServiceAccountToken: false was dropped")
	}
	// Nulls are dropped; pointers to empty structs kept.
	if has(t, u, "spec", "template", "metadata", "creationTimestamp") {
		t.Error("null creationTimestamp sent")
	}
	vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "volumes")
	if len(vols) != 1 || vols[0].(map[string]any)["emptyDir"] == nil {
		t.Errorf("emptyDir volume lost: %v", vols)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if c["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] != "10m" {
		t.Errorf("resources = %v", c["resources"])
	}
	if p := c["ports"].([]any)[0].(map[string]any); p["containerPort"] != int64(8443) || p["protocol"] != nil || p["hostPort"] != nil {
		t.Errorf("port = %v", p)
	}

	// The hash is stable and changes with the object.
	u2, _ := Desired(dep.DeepCopy(), s)
	if u2.GetAnnotations()[AppliedHashAnnotation] != hash {
		t.Error("hash not deterministic")
	}
	dep2 := dep.DeepCopy()
	dep2.Spec.Template.Spec.Containers[0].Image = "img2"
	u3, _ := Desired(dep2, s)
	if u3.GetAnnotations()[AppliedHashAnnotation] == hash {
		t.Error("hash did not change with the object")
	}
	// Status and server metadata do not affect the hash.
	dep3 := dep.DeepCopy()
	dep3.Status.Replicas = 9
	dep3.ResourceVersion = "99"
	u4, _ := Desired(dep3, s)
	if u4.GetAnnotations()[AppliedHashAnnotation] != hash {
		t.Error("hash depends on status or resourceVersion")
	}
}

func TestDesiredSecretStringData(t *testing.T) {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Data:       map[string][]byte{"a": []byte("1")},
		StringData: map[string]string{"b": "2"},
	}
	u, err := Desired(sec, scheme.New())
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	if data["a"] != base64.StdEncoding.EncodeToString([]byte("1")) || data["b"] != base64.StdEncoding.EncodeToString([]byte("2")) {
		t.Errorf("data = %v", data)
	}
	if has(t, u, "stringData") {
		t.Error("stringData sent")
	}
}

func TestDesiredUnstructured(t *testing.T) {
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "ns", "resourceVersion": "3", "labels": nil},
		"data":     map[string]any{"k": "v", "gone": nil},
		"status":   map[string]any{"x": "y"},
	}}
	before := in.DeepCopy()
	u, err := Desired(in, scheme.New())
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before, in) {
		t.Error("Desired modified its input")
	}
	if u.GetResourceVersion() != "" || has(t, u, "status") || has(t, u, "data", "gone") {
		t.Errorf("unexpected content: %v", u.Object)
	}
	if u.GetLabels()[config.ManagedByLabel] != config.ManagedByValue {
		t.Errorf("labels = %v", u.GetLabels())
	}
}
