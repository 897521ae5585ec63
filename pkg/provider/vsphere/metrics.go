package vsphere

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
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

// newRequestHistogram returns the histogram of vCenter requests by client,
// operation and status. The buckets reach past DefaultAPITimeout, so a
// request cut by the timeout still lands in a finite bucket.
func newRequestHistogram() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    RequestDurationMetric,
		Help:    "Duration of the vSphere provider's vCenter requests by client (soap, rest), operation and status (success, error).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"client", "operation", "status"})
}

// requestMetrics is where an Actuator's sessions observe their requests. The
// histogram is replaced by RegisterMetrics when the registry already serves
// one (several Actuators in a process feed the one that is scraped).
type requestMetrics struct {
	mu  sync.RWMutex
	vec *prometheus.HistogramVec
}

func (r *requestMetrics) observe(client, operation, status string, d time.Duration) {
	r.mu.RLock()
	vec := r.vec
	r.mu.RUnlock()
	vec.WithLabelValues(client, operation, status).Observe(d.Seconds())
}

// RegisterMetrics registers the Actuator's vCenter request histogram
// (RequestDurationMetric) with reg, the registry the binary serves. When reg
// already has it (another Actuator registered first), the Actuator observes
// into that one. Call it before the Actuator's first call.
func (a *Actuator) RegisterMetrics(reg prometheus.Registerer) error {
	m := a.sessions.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	err := reg.Register(m.vec)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		existing, ok := are.ExistingCollector.(*prometheus.HistogramVec)
		if !ok {
			return fmt.Errorf("registering %s: a different collector of that name is registered", RequestDurationMetric)
		}
		m.vec = existing
		return nil
	}
	if err != nil {
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
	status := statusSuccess
	if err != nil {
		status = statusError
	}
	s.metrics.observe(clientSOAP, soapOperation(req), status, time.Since(start))
	return err
}

// soapOperation names a SOAP request by its body type: govmomi's
// methods.CloneVM_TaskBody is "CloneVM_Task".
func soapOperation(req soap.HasFault) string {
	t := reflect.TypeOf(req)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return unknownOperation
	}
	name, ok := strings.CutSuffix(t.Elem().Name(), "Body")
	if !ok || name == "" {
		return unknownOperation
	}
	return name
}

// restMetrics times each HTTP request of a vCenter REST (vAPI) client.
type restMetrics struct {
	next    http.RoundTripper
	metrics *requestMetrics
}

// RoundTrip implements http.RoundTripper.
func (r restMetrics) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	start := time.Now()
	resp, err := next.RoundTrip(req)
	status := statusSuccess
	if err != nil || resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		status = statusError
	}
	r.metrics.observe(clientREST, req.Method+" "+restPath(req.URL.Path), status, time.Since(start))
	return resp, err
}

// restPath replaces the IDs in a REST path by {id}, so a label names an
// operation and not one object: the series stay few.
func restPath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if isRESTID(s) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// isRESTID reports whether a path segment is an object ID: a URN
// (urn:vmomi:InventoryServiceTag:...), an "id:" reference, a UUID or a
// number.
func isRESTID(s string) bool {
	if s == "" {
		return false
	}
	l := strings.ToLower(s)
	if strings.HasPrefix(l, "urn:") || strings.HasPrefix(l, "id:") || isUUID(l) {
		return true
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// isUUID reports whether s (lower case) has a UUID's 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
