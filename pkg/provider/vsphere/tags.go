package vsphere

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
)

// restSession is the vCenter REST (vAPI) login of a session, for tags.
type restSession struct {
	mu     sync.Mutex
	client *rest.Client
	// clusterTags caches the cluster ID tag's ID per cluster ID ("" when there is none, as on UPI clusters).
	clusterTags sync.Map
}

// rest returns a logged-in REST client for the session's vCenter.
func (s *session) rest(ctx context.Context, creds credentials) (*rest.Client, error) {
	r := &s.restSession
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		if us, err := r.client.Session(ctx); err == nil && us != nil {
			return r.client, nil
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

// clusterTagID finds the tag named after the cluster ID in the installer's category, once per cluster ID.
func (s *session) clusterTagID(ctx context.Context, m *tags.Manager, clusterID string) (string, error) {
	if id, ok := s.restSession.clusterTags.Load(clusterID); ok {
		return id.(string), nil
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
	s.restSession.clusterTags.Store(clusterID, id)
	return id, nil
}

// reconcileTags attaches the cluster ID tag (when it exists) and the providerSpec's tagIDs to the VM where
// missing; tags are never detached (as in OpenShift).
func reconcileTags(ctx context.Context, s *session, creds credentials, vm mo.Reference, clusterID string, tagIDs []string) error {
	rc, err := s.rest(ctx, creds)
	if err != nil {
		return err
	}
	m := tags.NewManager(rc)
	want := slices.Clone(tagIDs)
	clusterTag, err := s.clusterTagID(ctx, m, clusterID)
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
