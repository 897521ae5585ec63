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

// ClusterSettings reads Settings as OpenShift does, from the Infrastructure "cluster" and the cloud provider
// config it names (docs/vsphere.md); a missing Infrastructure or config gives defaults, as on OpenShift.
type ClusterSettings struct {
	Reader client.Reader
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
	if ref := infra.Spec.CloudConfig; ref.Name != "" && ref.Key != "" {
		cm := &corev1.ConfigMap{}
		err := c.Reader.Get(ctx, client.ObjectKey{Namespace: openshiftConfigNamespace, Name: ref.Name}, cm)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return s, fmt.Errorf("reading ConfigMap %s/%s: %w", openshiftConfigNamespace, ref.Name, err)
		default:
			if s.Port, s.Insecure, err = cloudConfigFor(cm.Data[ref.Key], server); err != nil {
				return s, fmt.Errorf("ConfigMap %s/%s key %q: %w; fix the vSphere cloud provider config there", openshiftConfigNamespace, ref.Name, ref.Key, err)
			}
		}
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

// cloudConfigFor reads server's port and insecure flag from the cloud provider config (legacy INI or YAML): the
// vCenter's own values, else the global ones. Hand-written INI: the module has no INI library.
func cloudConfigFor(text, server string) (string, bool, error) {
	type endpoint struct {
		port     string
		insecure *bool
	}
	var global, vc endpoint
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
					return "", false, fmt.Errorf("line %d: section header %q has no closing ]", n, line)
				}
				section, sub, _ = strings.Cut(strings.TrimSpace(line[1:len(line)-1]), " ")
				section, sub = strings.ToLower(section), strings.Trim(strings.TrimSpace(sub), `"`)
				continue
			}
			key, value, ok := strings.Cut(line, "=")
			if !ok {
				return "", false, fmt.Errorf("line %d: %q is not key = value", n, line)
			}
			key, value = strings.ToLower(strings.TrimSpace(key)), strings.Trim(strings.TrimSpace(value), `"`)
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
			return "", false, err
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
		}
		if err := yaml.Unmarshal([]byte(text), &y); err != nil {
			return "", false, err
		}
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
	return cmp.Or(vc.port, global.port), ptr.Deref(vc.insecure, ptr.Deref(global.insecure, false)), nil
}
