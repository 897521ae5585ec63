package vspheretest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv/poll"
)

// While paused, the provider's endpoint accepts connections but answers
// nothing, so a client times out; a request sent during the pause is not
// lost but done once resumed (as by a vCenter given SIGCONT); the inspection
// client works throughout.
func TestPauseHoldsTrafficUntilResume(t *testing.T) {
	v := Start(t, nil)
	ctx := t.Context()
	const timeout = 300 * time.Millisecond
	sc := soap.NewClient(&url.URL{Scheme: "https", Host: net.JoinHostPort(v.Server, v.Port), Path: vim25.Path}, true)
	sc.Timeout = timeout
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	c := &govmomi.Client{Client: vc, SessionManager: session.NewManager(vc)}
	if err := c.Login(ctx, url.UserPassword(Username, Password)); err != nil {
		t.Fatal(err)
	}
	vm := object.NewVirtualMachine(c.Client, v.VM(Template).Reference())

	v.Pause()
	t.Cleanup(v.Resume)
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(v.Server, v.Port), time.Second)
	if err != nil {
		t.Fatalf("a new connection while paused: %v; want it accepted (held), not refused", err)
	}
	_ = conn.Close()
	start := time.Now()
	if _, err := vm.Rename(ctx, "rhcos-renamed"); err == nil {
		t.Fatal("a call through the paused endpoint was answered")
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the call failed after %s, before its %s timeout: the pause refused or reset it", took, timeout)
	}
	if n := v.VMsNamed(Template); n != 1 { // the inspection client still answers
		t.Fatalf("%d VMs named %s while paused, want 1 (not renamed yet)", n, Template)
	}

	v.Resume()
	poll.Eventually(t, 10*time.Second, "the rename sent during the pause done after Resume", poll.Check(func() error {
		if n := v.VMsNamed("rhcos-renamed"); n != 1 {
			return fmt.Errorf("%d VMs named rhcos-renamed", n)
		}
		return nil
	}))
	if err := c.Logout(ctx); err != nil {
		t.Errorf("a call after Resume: %v", err)
	}
}
