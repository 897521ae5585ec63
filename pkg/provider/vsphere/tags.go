package vsphere

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
)

// restSession is the vCenter REST (vAPI) login of a session, for tags.
type restSession struct {
	mu     sync.Mutex
	client *rest.Client
}

// tagIDTTL is how long a looked-up tag or category ID (or its absence) is kept: OpenShift's 12 hours, so a
// cluster ID tag created later (a UPI cluster's) is found within that time.
const tagIDTTL = 12 * time.Hour

// tagIDCache maps tag and category names to their IDs ("" for none) for tagIDTTL: a lookup by name lists every
// tag or category and reads them one by one.
type tagIDCache struct {
	mu      sync.Mutex
	entries map[string]tagIDEntry
}

type tagIDEntry struct {
	id      string
	expires time.Time
}

func (c *tagIDCache) get(key string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.After(e.expires) {
		return "", false
	}
	return e.id, true
}

func (c *tagIDCache) set(key, id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]tagIDEntry{}
	}
	c.entries[key] = tagIDEntry{id: id, expires: now.Add(tagIDTTL)}
}

// rest returns a logged-in REST client for the session's vCenter, logging in again only when vCenter no longer
// knows the login; a check that times out is an error, as for the SOAP session.
func (s *session) rest(ctx context.Context, creds credentials) (*rest.Client, error) {
	r := &s.restSession
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		us, err := r.client.Session(ctx)
		if err == nil && us != nil {
			return r.client, nil
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("checking the REST session on vCenter: %w (vCenter is not answering)", err)
		}
	}
	c := rest.NewClient(s.client.Client) // sharing the session's connection, its requests timed
	c.Client.Client.Transport = restMetrics{next: c.Client.Client.Transport, metrics: s.metrics}
	if err := c.Login(ctx, url.UserPassword(creds.username, creds.password)); err != nil {
		return nil, fmt.Errorf("logging in to the vCenter REST API as %q (for tags): %w", creds.username, err)
	}
	r.client = c
	return c, nil
}

// clusterTagID finds the tag named after the cluster ID in the installer's category, once per cluster ID and
// tagIDTTL.
func (s *session) clusterTagID(ctx context.Context, m *tags.Manager, clusterID string, now time.Time) (string, error) {
	key := "cluster-tag/" + clusterID
	if id, ok := s.tagIDs.get(key, now); ok {
		return id, nil
	}
	id := ""
	cats, err := m.GetCategories(ctx)
	if err != nil {
		return "", fmt.Errorf("listing tag categories: %w", err)
	}
	for _, c := range cats {
		if c.Name != "openshift-"+clusterID { // the installer's category (its destroy finds the VMs by it)
			continue
		}
		ts, err := m.GetTagsForCategory(ctx, c.ID)
		if err != nil {
			return "", fmt.Errorf("listing the tags of category %s: %w", c.Name, err)
		}
		if i := slices.IndexFunc(ts, func(t tags.Tag) bool { return t.Name == clusterID }); i >= 0 {
			id = ts[i].ID
		}
	}
	s.tagIDs.set(key, id, now)
	return id, nil
}

// reconcileTags attaches the cluster ID tag (when it exists) and the providerSpec's tagIDs to the VM where
// missing; tags are never detached (as in OpenShift).
func reconcileTags(ctx context.Context, s *session, rc *rest.Client, vm mo.Reference, clusterID string, tagIDs []string, now time.Time) error {
	m := tags.NewManager(rc)
	want := slices.Clone(tagIDs)
	clusterTag, err := s.clusterTagID(ctx, m, clusterID, now)
	if err != nil {
		return err
	}
	if clusterTag != "" {
		want = append([]string{clusterTag}, want...)
	}
	if len(want) == 0 {
		return nil
	}
	attached, err := m.ListAttachedTags(ctx, vm)
	if err != nil {
		return fmt.Errorf("listing the tags of VM %s: %w", vm.Reference().Value, err)
	}
	for _, id := range want {
		if slices.Contains(attached, id) {
			continue
		}
		if err := m.AttachTag(ctx, id, vm); err != nil {
			return fmt.Errorf("attaching tag %s to VM %s: %w (the tag must exist on vCenter: create it or fix providerSpec.tagIDs)", id, vm.Reference().Value, err)
		}
	}
	return nil
}
