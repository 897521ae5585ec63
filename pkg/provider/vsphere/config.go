package vsphere

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
			cc, err := parseCloudConfig(cm.Data[ref.Key])
			if err != nil {
				return s, fmt.Errorf("ConfigMap %s/%s key %q: %w; fix the vSphere cloud provider config there", openshiftConfigNamespace, ref.Name, ref.Key, err)
			}
			s.Port, s.Insecure = cc.forServer(server)
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

// cloudConfig is what the provider reads of the vSphere cloud provider config: the global port and insecure
// flag and per-vCenter overrides.
type cloudConfig struct {
	port     string
	insecure bool
	vcenters map[string]vcenterConfig
}

type vcenterConfig struct {
	port     string
	insecure *bool
}

func (c cloudConfig) forServer(server string) (string, bool) {
	port, insecure := c.port, c.insecure
	if vc, ok := c.vcenters[server]; ok {
		if vc.port != "" {
			port = vc.port
		}
		if vc.insecure != nil {
			insecure = *vc.insecure
		}
	}
	return port, insecure
}

// parseCloudConfig reads the legacy INI format or the YAML one. Hand-written: the module carries no INI
// library and only four keys matter.
func parseCloudConfig(text string) (cloudConfig, error) {
	if strings.TrimSpace(text) == "" {
		return cloudConfig{}, nil
	}
	if strings.HasPrefix(strings.TrimSpace(text), "[") || strings.Contains(text, "\n[") {
		return parseINI(text)
	}
	return parseYAML(text)
}

func parseINI(text string) (cloudConfig, error) {
	c := cloudConfig{vcenters: map[string]vcenterConfig{}}
	section, sub := "", ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") {
				return c, fmt.Errorf("line %d: section header %q has no closing ]", n, line)
			}
			name := strings.TrimSpace(line[1 : len(line)-1])
			section, sub, _ = strings.Cut(name, " ")
			section, sub = strings.ToLower(section), strings.Trim(strings.TrimSpace(sub), `"`)
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return c, fmt.Errorf("line %d: %q is not key = value", n, line)
		}
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.Trim(strings.TrimSpace(value), `"`)
		switch {
		case section == "global" && key == "port":
			c.port = value
		case section == "global" && key == "insecure-flag":
			c.insecure = iniTrue(value)
		case section == "virtualcenter" && sub != "":
			vc := c.vcenters[sub]
			switch key {
			case "port":
				vc.port = value
			case "insecure-flag":
				b := iniTrue(value)
				vc.insecure = &b
			}
			c.vcenters[sub] = vc
		}
	}
	return c, sc.Err()
}

// iniTrue is gcfg's boolean: 1, true, yes, on.
func iniTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

type yamlVCenter struct {
	Server       string `json:"server"`
	Port         int    `json:"port"`
	InsecureFlag *bool  `json:"insecureFlag"`
}

type yamlConfig struct {
	Global struct {
		Port         int  `json:"port"`
		InsecureFlag bool `json:"insecureFlag"`
	} `json:"global"`
	VCenter map[string]yamlVCenter `json:"vcenter"`
}

func parseYAML(text string) (cloudConfig, error) {
	var y yamlConfig
	if err := yaml.Unmarshal([]byte(text), &y); err != nil {
		return cloudConfig{}, err
	}
	c := cloudConfig{insecure: y.Global.InsecureFlag, vcenters: map[string]vcenterConfig{}}
	if y.Global.Port > 0 {
		c.port = strconv.Itoa(y.Global.Port)
	}
	for name, vc := range y.VCenter {
		server := vc.Server
		if server == "" {
			server = name
		}
		v := vcenterConfig{insecure: vc.InsecureFlag}
		if vc.Port > 0 {
			v.port = strconv.Itoa(vc.Port)
		}
		c.vcenters[server] = v
	}
	return c, nil
}
