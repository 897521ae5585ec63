//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/nodeutil"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// kwokNodeAnnotation makes the cluster's kwok controller keep a Node Ready
// and "run" the pods bound to it.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// TestKwokNodeRunsPods proves the cluster can stand in for real machines: a
// Node with the kwok annotation becomes Ready and a Deployment's pods reach
// Running on it.
func TestKwokNodeRunsPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	nodeName := "e2e-kwok-" + rand.String(5)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        nodeName,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels:      map[string]string{corev1.LabelHostname: nodeName, "type": "kwok"},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	if err := cluster.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), node) })

	waitFor(ctx, t, "node "+nodeName+" Ready", func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := cluster.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
			return false, err
		}
		if !nodeutil.IsReady(n) {
			return false, fmt.Errorf("Ready condition %+v", nodeutil.ReadyCondition(n))
		}
		return true, nil
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-cluster-"}}
	if err := cluster.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Delete(context.Background(), ns) })

	labels := map[string]string{"app": "e2e-pause"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pause", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{corev1.LabelHostname: nodeName},
					Containers:   []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if err := cluster.Create(ctx, deploy); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}

	waitFor(ctx, t, "2 pods Running on "+nodeName, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := cluster.List(ctx, pods, client.InNamespace(ns.Name), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == nodeName && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, nil
	})
	waitFor(ctx, t, "deployment available", func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := cluster.Get(ctx, client.ObjectKeyFromObject(deploy), d); err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == 2, nil
	})
}

// waitFor polls cond until it holds, failing the test with what it waited
// for (and cond's last error) when ctx ends first. Errors are retried.
func waitFor(ctx context.Context, t *testing.T, what string, cond poll.Condition) {
	t.Helper()
	if err := poll.Until(ctx, 0, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	t.Logf("ok: %s", what)
}
