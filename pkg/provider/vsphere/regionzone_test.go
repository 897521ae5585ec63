package vsphere

import (
	"net/url"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/tags"
	"github.com/vmware/govmomi/vim25/mo"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/provider/vsphere/vspheretest"
)

// Breaks if: a farther object's tag wins over a nearer one's, or a category that is not configured counts.
func TestTagsRegionZone(t *testing.T) {
	host := []tagInfo{{"z-host", "k8s-zone"}, {"other", "team"}}
	cluster := []tagInfo{{"z-cluster", "k8s-zone"}, {"r-cluster", "k8s-region"}}
	dc := []tagInfo{{"r-dc", "k8s-region"}}
	cases := []struct {
		name                 string
		objs                 [][]tagInfo
		regionCat, zoneCat   string
		wantRegion, wantZone string
	}{
		{"nearest of each", [][]tagInfo{host, cluster, dc}, "k8s-region", "k8s-zone", "r-cluster", "z-host"},
		{"region from the datacenter", [][]tagInfo{host, nil, dc}, "k8s-region", "k8s-zone", "r-dc", "z-host"},
		{"no tags", [][]tagInfo{nil, nil}, "k8s-region", "k8s-zone", "", ""},
		{"zone category only", [][]tagInfo{host, cluster, dc}, "", "k8s-zone", "", "z-host"},
		{"categories not configured", [][]tagInfo{host, cluster, dc}, "", "", "", ""},
		{"one category for both: region", [][]tagInfo{host}, "k8s-zone", "k8s-zone", "z-host", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, z := tagsRegionZone(tc.objs, tc.regionCat, tc.zoneCat)
			if r != tc.wantRegion || z != tc.wantZone {
				t.Errorf("got %q/%q, want %q/%q", r, z, tc.wantRegion, tc.wantZone)
			}
		})
	}
}

// Breaks if: the failure domain stops completing what the tags lack, or empty labels are written without a
// cloud config (OpenShift writes them only with one).
func TestDecideRegionZone(t *testing.T) {
	fd := &configv1.VSpherePlatformFailureDomainSpec{Region: "r-fd", Zone: "z-fd"}
	cases := []struct {
		name                 string
		src                  regionZoneSource
		wantRegion, wantZone string
		wantSet              bool
	}{
		{"tags win", regionZoneSource{tagsRead: true, tagRegion: "r", tagZone: "z", fd: fd}, "r", "z", true},
		{"failure domain completes the tags", regionZoneSource{tagsRead: true, tagRegion: "r", fd: fd}, "r", "z-fd", true},
		{"tags found nothing, no failure domain: empty, as OpenShift", regionZoneSource{tagsRead: true, cloudConfig: true}, "", "", true},
		{"no categories: the failure domain", regionZoneSource{fd: fd, cloudConfig: true}, "r-fd", "z-fd", true},
		{"no categories, no failure domain, a cloud config: empty, as OpenShift", regionZoneSource{cloudConfig: true}, "", "", true},
		{"no cloud config, no failure domain: left alone", regionZoneSource{}, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, z, set := decideRegionZone(tc.src)
			if r != tc.wantRegion || z != tc.wantZone || set != tc.wantSet {
				t.Errorf("got %q/%q set %v, want %q/%q set %v", r, z, set, tc.wantRegion, tc.wantZone, tc.wantSet)
			}
		})
	}
}

// With the cloud config's [Labels] categories, Update labels the Machine from the tags of its VM's host and
// ancestors on vcsim (the host's zone tag nearer than the cluster's, the datacenter's region), as OpenShift
// does; a second Update reads the tags' names from the cache (one REST listing, no tag or category read).
// Breaks if: the tags are not read, the cluster's zone wins over the host's, or the names are read every time.
func TestUpdateRegionZoneFromTags(t *testing.T) {
	e := newSimEnv(t)
	e.a.settings = StaticSettings{Port: e.Port, Insecure: true, RegionCategory: "k8s-region", ZoneCategory: "k8s-zone", HasCloudConfig: true}
	reg := prometheus.NewRegistry()
	if err := e.a.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	rc := rest.NewClient(e.Client.Client)
	if err := rc.Login(e.ctx, url.UserPassword(vspheretest.Username, vspheretest.Password)); err != nil {
		t.Fatal(err)
	}
	tm := tags.NewManager(rc)
	category := func(name string) string {
		t.Helper()
		id, err := tm.CreateCategory(e.ctx, &tags.Category{Name: name, Cardinality: "SINGLE", AssociableTypes: []string{"Datacenter", "ClusterComputeResource", "HostSystem"}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	regionCat, zoneCat := category("k8s-region"), category("k8s-zone")
	attach := func(cat, name string, obj mo.Reference) {
		t.Helper()
		id, err := tm.CreateTag(e.ctx, &tags.Tag{Name: name, CategoryID: cat})
		if err != nil {
			t.Fatal(err)
		}
		if err := tm.AttachTag(e.ctx, id, obj); err != nil {
			t.Fatal(err)
		}
	}

	m := e.newMachine("worker-0", nil)
	if err := e.until(m, e.a.Create, true); err != nil {
		t.Fatal(err)
	}
	host, err := e.vm("worker-0").HostSystem(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := find.NewFinder(e.Client.Client)
	dc, err := f.Datacenter(e.ctx, vspheretest.Datacenter)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := f.SetDatacenter(dc).ClusterComputeResource(e.ctx, "DC0_C0")
	if err != nil {
		t.Fatal(err)
	}
	attach(regionCat, "region-dc", dc)
	attach(zoneCat, "zone-cluster", cluster)
	attach(zoneCat, "zone-host", host)

	labels := func() map[string]string {
		t.Helper()
		stored := &machinev1beta1.Machine{}
		if err := e.kube.Get(e.ctx, client.ObjectKeyFromObject(m), stored); err != nil {
			t.Fatal(err)
		}
		return stored.Labels
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatal(err)
	}
	if l := labels(); l[RegionLabel] != "region-dc" || l[ZoneLabel] != "zone-host" {
		t.Errorf("labels %v, want region region-dc (the datacenter's), zone zone-host (the host's, nearer than the cluster's)", l)
	}
	tagReads := func() (list, reads uint64) {
		for k, n := range requestCounts(t, reg) {
			switch {
			case strings.Contains(k, "list-attached-tags-on-objects") || strings.HasPrefix(k, "rest POST /rest/com/vmware/cis/tagging/tag-association "):
				list += n
			case strings.HasPrefix(k, "rest GET /rest/com/vmware/cis/tagging/tag/") || strings.HasPrefix(k, "rest GET /rest/com/vmware/cis/tagging/category/"):
				reads += n
			}
		}
		return list, reads
	}
	list1, reads1 := tagReads()
	if list1 == 0 || reads1 == 0 {
		t.Fatalf("the first Update listed tags %d times and read tags or categories %d times; observed %v", list1, reads1, requestCounts(t, reg))
	}
	if err := call(m, e.a.Update, true); err != nil {
		t.Fatal(err)
	}
	if _, reads2 := tagReads(); reads2 != reads1 {
		t.Errorf("the second Update read tags or categories %d more times, want 0 (cached by ID)", reads2-reads1)
	}
}
