package machineset

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// lossyCreates is a Create interceptor whose behaviour per Machine name is
// scripted: each entry of script is used by one Create of any name, in order
// (after the script: a plain Create).
type lossyCreates struct {
	mu     sync.Mutex
	script []string
	calls  int
}

func (l *lossyCreates) funcs() interceptor.Funcs {
	return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		l.mu.Lock()
		step := "create"
		if l.calls < len(l.script) {
			step = l.script[l.calls]
		}
		l.calls++
		l.mu.Unlock()
		switch step {
		case "created, response lost":
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			return io.ErrUnexpectedEOF
		case "not sent":
			return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		case "timeout":
			return apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
		case "forbidden":
			return apierrors.NewForbidden(schema.GroupResource{Resource: "machines"}, "", errors.New("quota"))
		}
		return c.Create(ctx, obj, opts...)
	}}
}

func fastRetry(steps int) wait.Backoff { return wait.Backoff{Duration: time.Millisecond, Steps: steps} }

// TestLostCreateResponseCreatesNoExtraMachine: Creates whose response was
// lost (the Machine exists), that never reached the server, or that timed
// out are sent again under the same name; the MachineSet ends with exactly
// the Machines it asked for, each expected once.
func TestLostCreateResponseCreatesNoExtraMachine(t *testing.T) {
	l := &lossyCreates{script: []string{
		"create",                 // batch 1
		"created, response lost", // batch 2: lost, then AlreadyExists on the resend
		"not sent",
		"create", // resend of "not sent" (the two resends race: either order ends the same)
		"create",
	}}
	ms := testMachineSet(3)
	r, c, rec := fakeReconciler(t, l.funcs(), ms)
	r.opts.CreateRetry = fastRetry(5)
	key := client.ObjectKeyFromObject(ms)
	if err := r.createMachines(context.Background(), ms, 3); err != nil {
		t.Fatalf("createMachines: %v", err)
	}
	list := &machinev1beta1.MachineList{}
	if err := c.List(context.Background(), list); err != nil || len(list.Items) != 3 {
		t.Fatalf("%d Machines (%v), want exactly 3", len(list.Items), err)
	}
	if creates, _ := r.expectations.Pending(key); creates != 3 {
		t.Errorf("pending creates = %d, want 3", creates)
	}
	for i := range list.Items {
		if !strings.HasPrefix(list.Items[i].Name, "ms-") || list.Items[i].GenerateName != "ms-" {
			t.Errorf("Machine %q (generateName %q): want a name generated from ms-", list.Items[i].Name, list.Items[i].GenerateName)
		}
		r.expectations.CreationObserved(key, list.Items[i].Name)
	}
	if ok, _ := r.expectations.Satisfied(key); !ok {
		t.Error("expectations not satisfied after observing the 3 Machines")
	}
	if n := len(rec.find(EventSuccessfulCreate)); n != 3 {
		t.Errorf("%d SuccessfulCreate events, want 3", n)
	}
	if n := len(rec.find(EventFailedCreate)); n != 0 {
		t.Errorf("%d FailedCreate events, want 0", n)
	}
}

// TestCreateOutcomeStillUnknown: when every resend goes unanswered the
// Machine stays expected under its name (it may exist), so the next
// Reconcile creates no replacement until it shows or the expectation
// expires; a refusal ends the resending and is a plain failure.
func TestCreateOutcomeStillUnknown(t *testing.T) {
	t.Run("unanswered", func(t *testing.T) {
		l := &lossyCreates{script: []string{"timeout", "not sent", "not sent", "not sent"}}
		ms := testMachineSet(1)
		r, c, _ := fakeReconciler(t, l.funcs(), ms)
		r.opts.CreateRetry = fastRetry(3)
		key := client.ObjectKeyFromObject(ms)
		err := r.createMachines(context.Background(), ms, 1)
		if !errors.Is(err, errOutcomeUnknown) {
			t.Fatalf("err = %v, want the outcome unknown", err)
		}
		if creates, _ := r.expectations.Pending(key); creates != 1 {
			t.Errorf("pending creates = %d, want 1 (the Machine may exist)", creates)
		}
		if ok, _ := r.expectations.Satisfied(key); ok {
			t.Error("satisfied: the next Reconcile would create a second Machine")
		}
		list := &machinev1beta1.MachineList{}
		if err := c.List(context.Background(), list); err != nil || len(list.Items) != 0 {
			t.Errorf("%d Machines (%v), want 0", len(list.Items), err)
		}
	})
	t.Run("refused on resend", func(t *testing.T) {
		l := &lossyCreates{script: []string{"not sent", "forbidden"}}
		ms := testMachineSet(1)
		r, _, rec := fakeReconciler(t, l.funcs(), ms)
		r.opts.CreateRetry = fastRetry(3)
		key := client.ObjectKeyFromObject(ms)
		err := r.createMachines(context.Background(), ms, 1)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("err = %v, want the refusal", err)
		}
		if creates, _ := r.expectations.Pending(key); creates != 0 {
			t.Errorf("pending creates = %d, want 0", creates)
		}
		if n := len(rec.find(EventFailedCreate)); n != 1 {
			t.Errorf("%d FailedCreate events, want 1", n)
		}
	})
}
