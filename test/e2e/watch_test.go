//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchFrom watches the objects of list's kind selected by opts, starting at
// resourceVersion (that of a List, so nothing after it is missed), and calls
// observe with every event until the test ends. When the API server closes
// the watch it resumes from the last resourceVersion seen. observe runs on
// the watch's goroutine: it must lock what it shares with the test. A
// watch.Error event (the watch could not resume) is passed to observe too.
func watchFrom(t *testing.T, list client.ObjectList, resourceVersion string, observe func(watch.Event), opts ...client.ListOption) {
	t.Helper()
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
		return cluster.Watch(ctx, list.DeepCopyObject().(client.ObjectList), append(opts, &client.ListOptions{Raw: &raw})...)
	}}
	ctx, stop := context.WithCancel(context.Background())
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, lw)
	if err != nil {
		stop()
		t.Fatalf("watching %T: %v", list, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			observe(ev)
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		stop()
		<-done
	})
}

// waitCaughtUp waits until a watch's view of some objects, as snapshot
// returns it (with the watch's error, if it broke), equals their current
// state, as listed returns it: the watch has then delivered every earlier
// change.
func waitCaughtUp[V comparable](ctx context.Context, t *testing.T, what string, listed func(context.Context) (map[string]V, error), snapshot func() (map[string]V, error)) {
	t.Helper()
	waitFor(ctx, t, "the "+what+" watch caught up", func(ctx context.Context) (bool, error) {
		now, err := listed(ctx)
		if err != nil {
			return false, err
		}
		seen, err := snapshot()
		if err != nil {
			return false, fmt.Errorf("the %s watch broke: %w", what, err)
		}
		if !maps.Equal(now, seen) {
			return false, fmt.Errorf("watched %v, listed %v", seen, now)
		}
		return true, nil
	})
}
