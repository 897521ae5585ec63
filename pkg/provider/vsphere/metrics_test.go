package vsphere

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
)

// requestCounts gathers reg and returns the vCenter request histogram's
// sample count per "client operation status".
func requestCounts(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != RequestDurationMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			counts[l["client"]+" "+l["operation"]+" "+l["status"]] += m.GetHistogram().GetSampleCount()
		}
	}
	return counts
}

// One Create, from login to the powered-on VM, is timed request by request
// in the registry the Actuator registered with.
func TestRequestMetricsOfOneCreate(t *testing.T) {
	e := newSimEnv(t)
	reg := prometheus.NewRegistry()
	if err := e.a.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	counts := requestCounts(t, reg)
	// One login, one clone, one power-on; the rest are reads (their number
	// follows the provider's code, so only their presence is checked).
	for k, want := range map[string]uint64{
		"soap Login success":               1,
		"soap CloneVM_Task success":        1,
		"soap PowerOnMultiVM_Task success": 1,
	} {
		if counts[k] != want {
			t.Errorf("%q observed %d times, want %d", k, counts[k], want)
		}
	}
	if counts["soap RetrievePropertiesEx success"] == 0 {
		t.Error("no RetrievePropertiesEx observed")
	}
	for k, n := range counts {
		if strings.HasPrefix(k, "rest ") || strings.Contains(k, unknownOperation) || strings.HasSuffix(k, " error") {
			t.Errorf("unexpected observation %q (%d): a Create without tags makes only successful SOAP calls", k, n)
		}
	}

	// Update attaches tags through the REST API: those calls are timed
	// too, with the IDs in their paths replaced.
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatalf("Update: %v", err)
	}
	counts = requestCounts(t, reg)
	if counts["rest POST /rest/com/vmware/cis/session success"] != 1 {
		t.Errorf("REST login observed %d times, want 1; observed: %v", counts["rest POST /rest/com/vmware/cis/session success"], counts)
	}
}

type soapResult struct{ err error }

func (s soapResult) RoundTrip(context.Context, soap.HasFault, soap.HasFault) error { return s.err }

type httpResult struct {
	code int
	err  error
}

func (h httpResult) RoundTrip(*http.Request) (*http.Response, error) {
	if h.err != nil {
		return nil, h.err
	}
	return &http.Response{StatusCode: h.code, Body: http.NoBody}, nil
}

// Each request is one observation labelled with its client, operation and
// status.
func TestRequestLabels(t *testing.T) {
	tests := []struct {
		name string
		do   func(*requestMetrics)
		want string
	}{
		{"soap success", func(m *requestMetrics) {
			_ = soapMetrics{next: soapResult{}, metrics: m}.RoundTrip(context.Background(), &methods.CloneVM_TaskBody{}, &methods.CloneVM_TaskBody{})
		}, "soap CloneVM_Task success"},
		{"soap fault", func(m *requestMetrics) {
			_ = soapMetrics{next: soapResult{errors.New("down")}, metrics: m}.RoundTrip(context.Background(), &methods.RetrievePropertiesExBody{}, &methods.RetrievePropertiesExBody{})
		}, "soap RetrievePropertiesEx error"},
		{"soap body of no known form", func(m *requestMetrics) {
			_ = soapMetrics{next: soapResult{}, metrics: m}.RoundTrip(context.Background(), nil, nil)
		}, "soap unknown success"},
		{"rest tag by URN", func(m *requestMetrics) {
			restRoundTrip(t, m, httpResult{code: 200}, "GET", "/rest/com/vmware/cis/tagging/tag/id:urn:vmomi:InventoryServiceTag:0a5b:GLOBAL")
		}, "rest GET /rest/com/vmware/cis/tagging/tag/{id} success"},
		{"rest UUID and number", func(m *requestMetrics) {
			restRoundTrip(t, m, httpResult{code: 204}, "DELETE", "/api/vcenter/vm/5013b0d1-4ab8-4d0c-a8fc-3f2c3b6f0a7e/disk/2000")
		}, "rest DELETE /api/vcenter/vm/{id}/disk/{id} success"},
		{"rest 404", func(m *requestMetrics) {
			restRoundTrip(t, m, httpResult{code: 404}, "GET", "/api/session")
		}, "rest GET /api/session error"},
		{"rest transport error", func(m *requestMetrics) {
			restRoundTrip(t, m, httpResult{err: errors.New("refused")}, "POST", "/api/session")
		}, "rest POST /api/session error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := &requestMetrics{vec: newRequestHistogram()}
			reg.MustRegister(m.vec)
			tt.do(m)
			got := requestCounts(t, reg)
			if len(got) != 1 || got[tt.want] != 1 {
				t.Errorf("observed %v, want one %q", got, tt.want)
			}
		})
	}
}

func restRoundTrip(t *testing.T, m *requestMetrics, next http.RoundTripper, method, path string) {
	t.Helper()
	req, err := http.NewRequest(method, "https://vcenter.example.com"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := (restMetrics{next: next, metrics: m}).RoundTrip(req); err == nil {
		_ = resp.Body.Close()
	}
}

// A second Actuator registering with the same registry observes into the
// histogram that registry already serves.
func TestRegisterMetricsTwiceSharesTheServedHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := NewActuator(Options{}), NewActuator(Options{})
	for _, x := range []*Actuator{a, b} {
		if err := x.RegisterMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	b.sessions.metrics.observe(clientSOAP, "Login", false, time.Now())
	if got := requestCounts(t, reg)["soap Login success"]; got != 1 {
		t.Errorf("the served histogram has %d Login observations, want 1", got)
	}
}
