package vsphere

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Settings are what the provider needs to know about a vCenter besides the providerSpec.
type Settings struct {
	// Port of the vCenter's SDK endpoint; "" means the URL's default (443).
	Port string
	// Insecure skips TLS verification of the vCenter's certificate.
	Insecure bool
	// FailureDomains of the cluster (Infrastructure spec.platformSpec.vsphere); they give region/zone labels.
	FailureDomains []configv1.VSpherePlatformFailureDomainSpec
	// RegionCategory and ZoneCategory are the tag categories of the cloud provider config's [Labels] (YAML
	// labels): region/zone labels for a workspace no failure domain holds, from tags on the VM's host and its
	// ancestors, as OpenShift reads them.
	RegionCategory, ZoneCategory string
	// HasCloudConfig: a cloud provider config was read (OpenShift writes region/zone labels only then).
	HasCloudConfig bool
}

// SettingsSource gives the Settings of a vCenter server (ClusterSettings; tests pass StaticSettings).
type SettingsSource interface {
	Settings(ctx context.Context, server string) (Settings, error)
}

// StaticSettings is a SettingsSource that answers the same Settings for every server.
type StaticSettings Settings

// Settings implements SettingsSource.
func (s StaticSettings) Settings(context.Context, string) (Settings, error) { return Settings(s), nil }

const (
	infrastructureName       = "cluster"
	openshiftConfigNamespace = "openshift-config"
)

// Where OpenShift's vSphere provider reads the cloud provider config: the copy the cluster config operator keeps
// in openshift-config-managed.
const (
	ManagedCloudConfigNamespace = "openshift-config-managed"
	ManagedCloudConfigName      = "kube-cloud-config"
	ManagedCloudConfigKey       = "cloud.conf"
)

// ClusterSettings reads Settings as OpenShift does, from the Infrastructure "cluster" and the cloud provider
// config (docs/vsphere.md); a missing Infrastructure or config gives defaults, as on OpenShift.
type ClusterSettings struct {
	Reader client.Reader
}

// cloudConfigSource is one place the cloud provider config may be.
type cloudConfigSource struct{ namespace, name, key string }

func (c cloudConfigSource) String() string {
	return fmt.Sprintf("ConfigMap %s/%s key %q", c.namespace, c.name, c.key)
}

// readCloudConfig returns the text of the first source that has it: OpenShift's location, then (a cluster
// whose config operator has not made the copy, or a reader not allowed there) the Infrastructure's
// spec.cloudConfig in openshift-config, where this provider read it before. found is false when neither has it.
func (c ClusterSettings) readCloudConfig(ctx context.Context, ref configv1.ConfigMapFileReference) (text string, from cloudConfigSource, found bool, err error) {
	sources := []cloudConfigSource{{ManagedCloudConfigNamespace, ManagedCloudConfigName, ManagedCloudConfigKey}}
	if ref.Name != "" && ref.Key != "" {
		sources = append(sources, cloudConfigSource{openshiftConfigNamespace, ref.Name, ref.Key})
	}
	for i, src := range sources {
		cm := &corev1.ConfigMap{}
		err := c.Reader.Get(ctx, client.ObjectKey{Namespace: src.namespace, Name: src.name}, cm)
		switch {
		case apierrors.IsNotFound(err), i == 0 && apierrors.IsForbidden(err):
			continue // vanilla Kubernetes grants no read in openshift-config-managed
		case err != nil:
			return "", src, false, fmt.Errorf("reading %s: %w", src, err)
		}
		if text, ok := cm.Data[src.key]; ok {
			return text, src, true, nil
		}
	}
	return "", cloudConfigSource{}, false, nil
}

// Settings implements SettingsSource.
func (c ClusterSettings) Settings(ctx context.Context, server string) (Settings, error) {
	var s Settings
	infra := &configv1.Infrastructure{}
	if err := c.Reader.Get(ctx, client.ObjectKey{Name: infrastructureName}, infra); err != nil {
		// No Infrastructure API at all (vanilla Kubernetes) is no Infrastructure.
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return s, nil
		}
		return s, fmt.Errorf("reading Infrastructure %q: %w", infrastructureName, err)
	}
	text, from, found, err := c.readCloudConfig(ctx, infra.Spec.CloudConfig)
	if err != nil {
		return s, err
	}
	if found {
		cc, err := cloudConfigFor(text, server)
		if err != nil {
			return s, fmt.Errorf("%s: %w; fix the vSphere cloud provider config there", from, err)
		}
		s.Port, s.Insecure, s.RegionCategory, s.ZoneCategory, s.HasCloudConfig = cc.port, cc.insecure, cc.regionCategory, cc.zoneCategory, true
	}
	if vs := infra.Spec.PlatformSpec.VSphere; vs != nil {
		for _, vc := range vs.VCenters {
			if vc.Server == server && vc.Port > 0 {
				s.Port = strconv.Itoa(int(vc.Port))
			}
		}
		s.FailureDomains = vs.FailureDomains
	}
	return s, nil
}

// cloudConfig is what the provider reads from the cloud provider config for one vCenter.
type cloudConfig struct {
	port                         string
	insecure                     bool
	regionCategory, zoneCategory string
}

// cloudConfigFor reads server's port and insecure flag from the cloud provider config (legacy INI or YAML): the
// vCenter's own values, else the global ones; and the [Labels] tag categories. Hand-written INI: the module has
// no INI library.
func cloudConfigFor(text, server string) (cloudConfig, error) {
	type endpoint struct {
		port     string
		insecure *bool
	}
	var global, vc endpoint
	var labels struct{ region, zone string }
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "[") || strings.Contains(text, "\n[") {
		section, sub := "", ""
		sc := bufio.NewScanner(strings.NewReader(text))
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
				continue
			}
			if strings.HasPrefix(line, "[") {
				if !strings.HasSuffix(line, "]") {
					return cloudConfig{}, fmt.Errorf("line %d: section header %q has no closing ]", n, line)
				}
				section, sub, _ = strings.Cut(strings.TrimSpace(line[1:len(line)-1]), " ")
				section, sub = strings.ToLower(section), strings.Trim(strings.TrimSpace(sub), `"`)
				continue
			}
			key, value, ok := strings.Cut(line, "=")
			if !ok {
				return cloudConfig{}, fmt.Errorf("line %d: %q is not key = value", n, line)
			}
			key, value = strings.ToLower(strings.TrimSpace(key)), strings.Trim(strings.TrimSpace(value), `"`)
			if section == "labels" {
				switch key {
				case "region":
					labels.region = value
				case "zone":
					labels.zone = value
				}
				continue
			}
			e := &global
			if section == "virtualcenter" && sub == server {
				e = &vc
			} else if section != "global" {
				continue
			}
			switch key {
			case "port":
				e.port = value
			case "insecure-flag": // gcfg's boolean
				e.insecure = new(slices.Contains([]string{"1", "true", "yes", "on"}, strings.ToLower(value)))
			}
		}
		if err := sc.Err(); err != nil {
			return cloudConfig{}, err
		}
	} else if t != "" {
		type yamlEndpoint struct {
			Server       string `json:"server"`
			Port         int    `json:"port"`
			InsecureFlag *bool  `json:"insecureFlag"`
		}
		var y struct {
			Global  yamlEndpoint            `json:"global"`
			VCenter map[string]yamlEndpoint `json:"vcenter"`
			Labels  struct {
				Region string `json:"region"`
				Zone   string `json:"zone"`
			} `json:"labels"`
		}
		if err := yaml.Unmarshal([]byte(text), &y); err != nil {
			return cloudConfig{}, err
		}
		labels.region, labels.zone = y.Labels.Region, y.Labels.Zone
		port := func(p int) string {
			if p <= 0 {
				return ""
			}
			return strconv.Itoa(p)
		}
		global = endpoint{port(y.Global.Port), y.Global.InsecureFlag}
		// An entry naming the server in its server field wins over one keyed by it; among equals the
		// first key in order, so that the answer never depends on map order.
		best := 0
		for _, name := range slices.Sorted(maps.Keys(y.VCenter)) {
			v := y.VCenter[name]
			rank := 0
			switch {
			case v.Server == server:
				rank = 2
			case v.Server == "" && name == server:
				rank = 1
			}
			if rank > best {
				best, vc = rank, endpoint{port(v.Port), v.InsecureFlag}
			}
		}
	}
	return cloudConfig{port: cmp.Or(vc.port, global.port), insecure: ptr.Deref(vc.insecure, ptr.Deref(global.insecure, false)),
		regionCategory: labels.region, zoneCategory: labels.zone}, nil
}
