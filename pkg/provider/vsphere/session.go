package vsphere

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	vsession "github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider"
)

// userAgent is OpenShift's, so vCenter logs attribute the calls the same way.
const userAgent = "machineAPIvSphereProvider"

// session is a logged-in vCenter client scoped to one datacenter.
type session struct {
	client      *govmomi.Client
	finder      *find.Finder
	datacenter  *object.Datacenter
	restSession restSession
	metrics     *requestMetrics
	// tagIDs is the cache entry's, so it outlives a re-login (OpenShift keys it by server, user and datacenter).
	tagIDs *tagIDCache
}

// logout ends the session's REST and SOAP logins on vCenter (the REST one would otherwise stay until vCenter's
// idle timeout); errors are ignored: the session is dropped either way.
func (s *session) logout(ctx context.Context) {
	s.restSession.mu.Lock()
	if s.restSession.client != nil {
		_ = s.restSession.client.Logout(ctx)
		s.restSession.client = nil
	}
	s.restSession.mu.Unlock()
	_ = s.client.Logout(ctx)
}

// sessionKey identifies a cached session: server, user and datacenter (OpenShift's key) and how to reach it.
type sessionKey struct {
	server, port, username, datacenter string
	insecure                           bool
}

// cachedSession is one cache entry; its lock serialises logins to one vCenter, not calls to others.
type cachedSession struct {
	mu sync.Mutex
	*session
	password string
	tagIDs   tagIDCache
}

// sessions caches one session per sessionKey, per Actuator.
type sessions struct {
	mu      sync.Mutex
	byKey   map[sessionKey]*cachedSession
	timeout time.Duration
	metrics *requestMetrics // times every request of every session
}

// get returns the cached session for key when it is still logged in with the same password, and logs in
// again otherwise.
func (s *sessions) get(ctx context.Context, key sessionKey, password string) (*session, error) {
	s.mu.Lock()
	c, ok := s.byKey[key]
	if !ok {
		c = &cachedSession{}
		s.byKey[key] = c
	}
	s.mu.Unlock()
	c.mu.Lock()
	cached, same := c.session, c.password == password
	c.mu.Unlock()
	if cached != nil && same {
		// UserSession needs no privilege (SessionIsActive does); nil means expired. Checked outside the lock,
		// and a vCenter that does not answer is not logged in again: each call costs one timeout, not three.
		us, err := cached.client.SessionManager.UserSession(ctx)
		if err == nil && us != nil {
			return cached, nil
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("checking the session on vCenter %s: %w (vCenter is not answering)", key.server, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil && c.session != cached && c.password == password {
		return c.session, nil // another call logged in meanwhile
	}
	if c.session != nil {
		// Expired, or another password: this entry's own logins, shared with no other entry.
		c.session.logout(ctx)
		c.session = nil
	}
	sess, err := s.connect(ctx, key, password)
	if err != nil {
		return nil, err
	}
	sess.tagIDs = &c.tagIDs
	c.session, c.password = sess, password
	return sess, nil
}

func (s *sessions) connect(ctx context.Context, key sessionKey, password string) (*session, error) {
	host := key.server
	if key.port != "" {
		host = net.JoinHostPort(key.server, key.port)
	}
	u, err := soap.ParseURL(host)
	if err != nil || u == nil {
		return nil, provider.InvalidConfiguration("workspace.server %q is not a vCenter address: %v", key.server, err)
	}
	u.User = nil // logged in separately: a login failure is reported as such, the password never shows in a URL
	sc := soap.NewClient(u, key.insecure)
	sc.Timeout = s.timeout // every request, so a hung vCenter fails the call instead of blocking a worker
	sc.UserAgent = userAgent
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("connecting to vCenter %s: %w (check workspace.server, the port and insecure-flag in the cloud provider config, and that vCenter is reachable)", u.Host, err)
	}
	vc.RoundTripper = soapMetrics{next: vc.RoundTripper, metrics: s.metrics}
	c := &govmomi.Client{Client: vc, SessionManager: vsession.NewManager(vc)}
	if err := c.Login(ctx, url.UserPassword(key.username, password)); err != nil {
		return nil, fmt.Errorf("logging in to vCenter %s as %q: %w (check the credentials in the credentials Secret)", u.Host, key.username, err)
	}
	f := find.NewFinder(c.Client, false)
	dc, err := f.DatacenterOrDefault(ctx, key.datacenter)
	if err != nil {
		_ = c.Logout(ctx)
		var nf *find.NotFoundError
		var multiple *find.DefaultMultipleFoundError
		if errors.As(err, &nf) || errors.As(err, &multiple) {
			return nil, provider.InvalidConfiguration("workspace.datacenter: datacenter %q not found on vCenter %s (or several exist and none is named): %v", key.datacenter, u.Host, err)
		}
		return nil, fmt.Errorf("finding datacenter %q on vCenter %s: %w", key.datacenter, u.Host, err)
	}
	// The Finder fills its cache of the datacenter's folders on first use, unlocked: filled here, before
	// concurrent Reconciles share the session, so they only read it (a data race otherwise).
	if _, err := f.SetDatacenter(dc).DefaultFolder(ctx); err != nil {
		_ = c.Logout(ctx)
		return nil, fmt.Errorf("reading the folders of datacenter %q on vCenter %s: %w", key.datacenter, u.Host, err)
	}
	return &session{client: c, finder: f, datacenter: dc, metrics: s.metrics}, nil
}

// close logs every cached session out (tests, shutdown).
func (s *sessions) close(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.byKey {
		c.mu.Lock()
		if c.session != nil {
			c.session.logout(ctx)
		}
		c.mu.Unlock()
		delete(s.byKey, k)
	}
}

// DefaultCredentialsSecret is the Secret OpenShift's credentials request fills with vCenter credentials
// (the webhook's default for providerSpec.credentialsSecret).
const DefaultCredentialsSecret = "vsphere-cloud-credentials"

// credentials are a vCenter user and password.
type credentials struct {
	username, password string
}

// readCredentials reads <server>.username and <server>.password from the providerSpec's credentials Secret.
// A missing Secret is retried (it may come late); one without the keys is an InvalidConfiguration, as in OpenShift.
func readCredentials(ctx context.Context, c client.Reader, namespace string, spec *machinev1beta1.VSphereMachineProviderSpec) (credentials, error) {
	name := cmp.Or(ptr.Deref(spec.CredentialsSecret, corev1.LocalObjectReference{}).Name, DefaultCredentialsSecret)
	server := spec.Workspace.Server
	userKey, passwordKey := server+".username", server+".password"
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return credentials{}, fmt.Errorf("credentials secret %s/%s not found: create it with keys %q and %q (or name another Secret in providerSpec.credentialsSecret)", namespace, name, userKey, passwordKey)
		}
		return credentials{}, fmt.Errorf("reading credentials secret %s/%s: %w", namespace, name, err)
	}
	for _, k := range [][2]string{{userKey, "user name"}, {passwordKey, "password"}} {
		if len(secret.Data[k[0]]) == 0 {
			return credentials{}, provider.InvalidConfiguration("secret %s/%s does not have %q field set: add the vCenter %s for server %q", namespace, name, k[0], k[1], server)
		}
	}
	return credentials{username: string(secret.Data[userKey]), password: string(secret.Data[passwordKey])}, nil
}
