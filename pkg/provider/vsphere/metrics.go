package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware/govmomi/vim25/soap"
)

// RequestDurationMetric is OpenShift's name of the vCenter request histogram.
const RequestDurationMetric = "mapi_vsphere_request_duration_seconds"

// Values of the histogram's "client" and "status" labels (OpenShift's).
const (
	clientSOAP    = "soap"
	clientREST    = "rest"
	statusSuccess = "success"
	statusError   = "error"
)

// unknownOperation labels a request whose operation cannot be named.
const unknownOperation = "unknown"

// newRequestHistogram returns the histogram of vCenter requests by client, operation and status; the buckets
// reach past DefaultAPITimeout, so a request cut by the timeout lands in a finite bucket.
func newRequestHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    RequestDurationMetric,
		Help:    "Duration of the vSphere provider's vCenter requests by client (soap, rest), operation and status (success, error).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"client", "operation", "status"})
}

// requestMetrics is where an Actuator's sessions observe their requests; RegisterMetrics swaps in the
// registry's histogram when it already serves one (several Actuators in a process).
type requestMetrics struct {
	mu  sync.RWMutex
	vec *prometheus.HistogramVec
}

func (r *requestMetrics) observe(client, operation string, failed bool, start time.Time) {
	status := statusSuccess
	if failed {
		status = statusError
	}
	r.mu.RLock()
	vec := r.vec
	r.mu.RUnlock()
	vec.WithLabelValues(client, operation, status).Observe(time.Since(start).Seconds())
}

// RegisterMetrics registers the Actuator's vCenter request histogram (RequestDurationMetric) with reg, or
// observes into the one reg already has. Call it before the Actuator's first call.
func (a *Actuator) RegisterMetrics(reg prometheus.Registerer) error {
	m := a.sessions.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	var are prometheus.AlreadyRegisteredError
	switch err := reg.Register(m.vec); {
	case errors.As(err, &are):
		existing, ok := are.ExistingCollector.(*prometheus.HistogramVec)
		if !ok {
			return fmt.Errorf("registering %s: a different collector of that name is registered", RequestDurationMetric)
		}
		m.vec = existing
	case err != nil:
		return fmt.Errorf("registering %s: %w", RequestDurationMetric, err)
	}
	return nil
}

// soapMetrics times each SOAP request of a vim25 client.
type soapMetrics struct {
	next    soap.RoundTripper
	metrics *requestMetrics
}

// RoundTrip implements soap.RoundTripper.
func (s soapMetrics) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	start := time.Now()
	err := s.next.RoundTrip(ctx, req, res)
	s.metrics.observe(clientSOAP, soapOperation(req), err != nil, start)
	return err
}

// soapOperation names a SOAP request by its body type: methods.CloneVM_TaskBody is "CloneVM_Task".
func soapOperation(req soap.HasFault) string {
	if t := reflect.TypeOf(req); t != nil && t.Kind() == reflect.Pointer {
		if name, ok := strings.CutSuffix(t.Elem().Name(), "Body"); ok && name != "" {
			return name
		}
	}
	return unknownOperation
}

// restMetrics times each HTTP request of a vCenter REST (vAPI) client.
type restMetrics struct {
	next    http.RoundTripper
	metrics *requestMetrics
}

// RoundTrip implements http.RoundTripper.
func (r restMetrics) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := cmp.Or(r.next, http.DefaultTransport).RoundTrip(req)
	failed := err != nil || resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299
	r.metrics.observe(clientREST, req.Method+" "+restPath(req.URL.Path), failed, start)
	return resp, err
}

// restPath replaces the IDs in a REST path by {id}, so a label names an operation and the series stay few.
func restPath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if _, err := strconv.ParseUint(s, 10, 64); err == nil || restIDPattern.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// restIDPattern matches an object ID in a REST path besides a number: a URN (urn:vmomi:InventoryServiceTag:...),
// an "id:" reference or a UUID.
var restIDPattern = regexp.MustCompile(`(?i)^(urn:|id:|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$)`)
