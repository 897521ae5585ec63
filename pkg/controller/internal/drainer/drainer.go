// Package drainer builds the kubectl drain helper the machine and
// NodeMaintenance controllers share (never its waits: one pass per reconcile).
package drainer

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/drain"
)

// NewHelper returns a drain helper with the controllers' rules (grace periods honoured, DaemonSet pods ignored,
// emptyDir data deleted, unmanaged pods included), logging at V(1).
func NewHelper(ctx context.Context, kube kubernetes.Interface, log logr.Logger) *drain.Helper {
	w := logWriter{log}
	return &drain.Helper{
		Ctx:                 ctx,
		Client:              kube,
		Force:               true,
		GracePeriodSeconds:  -1,
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		Out:                 w,
		ErrOut:              w,
	}
}

// logWriter turns the helper's output lines into log lines.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		w.log.V(1).Info(msg)
	}
	return len(p), nil
}

// DeletePods deletes pods without eviction (a drain past its timeout): the "namespace/name" of each deleted (or
// already gone), and the errors of the others.
func DeletePods(h *drain.Helper, pods []corev1.Pod) (deleted []string, failed []error) {
	for _, p := range pods {
		if err := h.DeletePod(p); err != nil && !apierrors.IsNotFound(err) {
			failed = append(failed, fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		deleted = append(deleted, p.Namespace+"/"+p.Name)
	}
	return deleted, failed
}
