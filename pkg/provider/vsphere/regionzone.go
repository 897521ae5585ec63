package vsphere

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
)

// tagInfo is a tag's name and its category's name.
type tagInfo struct{ name, category string }

// tagsRegionZone picks the region and zone from the tags of the VM's host and its ancestors, nearest first (the
// host, its cluster, folders, the datacenter): the nearest tag of regionCategory and of zoneCategory, as OpenShift
// reads the cloud config's [Labels]; "" where none is found.
func tagsRegionZone(nearestFirst [][]tagInfo, regionCategory, zoneCategory string) (region, zone string) {
	for _, onObject := range nearestFirst {
		for _, t := range onObject {
			switch {
			case regionCategory != "" && t.category == regionCategory:
				region = cmp.Or(region, t.name)
			case zoneCategory != "" && t.category == zoneCategory:
				zone = cmp.Or(zone, t.name)
			}
		}
		if region != "" && zone != "" {
			break
		}
	}
	return region, zone
}

// regionZoneSource is what the region and zone labels are decided from.
type regionZoneSource struct {
	// tagsRead: the [Labels] categories are set and the tags were read; tagRegion and tagZone are what they gave.
	tagsRead           bool
	tagRegion, tagZone string
	// fd is the Infrastructure's failure domain holding the workspace (nil: none).
	fd *configv1.VSpherePlatformFailureDomainSpec
	// cloudConfig: a cloud provider config was read (OpenShift labels only then).
	cloudConfig bool
}

// decideRegionZone returns the Machine's region and zone labels, set false to leave them as they are: the tags
// of the [Labels] categories (OpenShift's source), each completed from the failure domain holding the workspace
// (which the installer's tags match); without categories the failure domain; with neither but a cloud config,
// empty values, which OpenShift writes then. A failed tag read changes only what the failure domain gives.
func decideRegionZone(src regionZoneSource) (region, zone string, set bool) {
	region, zone = src.tagRegion, src.tagZone
	if src.fd != nil {
		return cmp.Or(region, src.fd.Region), cmp.Or(zone, src.fd.Zone), true
	}
	return region, zone, src.tagsRead || src.cloudConfig
}

// readTagsRegionZone reads the tags of the [Labels] categories on the VM's host and its ancestors: one REST call
// for all of them, the tags' and categories' names cached by ID for tagIDTTL.
func readTagsRegionZone(ctx context.Context, s *session, rc *rest.Client, vm *object.VirtualMachine, regionCategory, zoneCategory string, now time.Time) (string, string, error) {
	host, err := vm.HostSystem(ctx)
	if err != nil {
		return "", "", fmt.Errorf("reading the host of VM %s: %w", vm.Reference().Value, err)
	}
	ancestors, err := mo.Ancestors(ctx, s.client.Client, s.client.ServiceContent.PropertyCollector, host.Reference())
	if err != nil {
		return "", "", fmt.Errorf("reading the ancestors of host %s: %w", host.Reference().Value, err)
	}
	slices.Reverse(ancestors) // nearest first
	refs := make([]mo.Reference, len(ancestors))
	at := map[string]int{} // moref value -> index in ancestors
	for i := range ancestors {
		refs[i] = ancestors[i].Self
		at[ancestors[i].Self.Value] = i
	}
	m := tags.NewManager(rc)
	attached, err := m.ListAttachedTagsOnObjects(ctx, refs)
	if err != nil {
		return "", "", fmt.Errorf("listing the tags of host %s and its ancestors: %w", host.Reference().Value, err)
	}
	nearestFirst := make([][]tagInfo, len(ancestors))
	for _, a := range attached {
		i, ok := at[a.ObjectID.Reference().Value]
		if !ok {
			continue
		}
		for _, id := range a.TagIDs {
			ti, err := s.tagInfo(ctx, m, id, now)
			if err != nil {
				return "", "", err
			}
			nearestFirst[i] = append(nearestFirst[i], ti)
		}
	}
	region, zone := tagsRegionZone(nearestFirst, regionCategory, zoneCategory)
	return region, zone, nil
}

// tagInfo returns a tag's and its category's names by the tag's ID, cached for tagIDTTL.
func (s *session) tagInfo(ctx context.Context, m *tags.Manager, id string, now time.Time) (tagInfo, error) {
	nameKey, catKey := "tag-name/"+id, "tag-category/"+id
	name, okName := s.tagIDs.get(nameKey, now)
	catID, okCat := s.tagIDs.get(catKey, now)
	if !okName || !okCat {
		t, err := m.GetTag(ctx, id)
		if err != nil {
			return tagInfo{}, fmt.Errorf("reading tag %s: %w", id, err)
		}
		name, catID = t.Name, t.CategoryID
		s.tagIDs.set(nameKey, name, now)
		s.tagIDs.set(catKey, catID, now)
	}
	catNameKey := "category-name/" + catID
	category, ok := s.tagIDs.get(catNameKey, now)
	if !ok {
		c, err := m.GetCategory(ctx, catID)
		if err != nil {
			return tagInfo{}, fmt.Errorf("reading tag category %s: %w", catID, err)
		}
		category = c.Name
		s.tagIDs.set(catNameKey, category, now)
	}
	return tagInfo{name: name, category: category}, nil
}
