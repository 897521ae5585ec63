// Package manifests embeds the YAML the operator ships: the CustomResourceDefinitions
// copied verbatim from github.com/openshift/api (see hack/update-crds.sh) and,
// later, the operand templates.
package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed crds
var crdFS embed.FS

// CRDSet names a group of embedded CRDs.
type CRDSet string

const (
	// MachineCRDs are the machine.openshift.io CRDs (Machine, MachineSet,
	// MachineHealthCheck) that the operator installs and owns.
	MachineCRDs CRDSet = "machine"
	// ConfigCRDs are the config.openshift.io CRDs the operator reads or reports
	// to (ClusterOperator, ClusterVersion, Infrastructure, Proxy, FeatureGate).
	// On OpenShift the platform owns them; on vanilla Kubernetes they are
	// installed alongside the operator.
	ConfigCRDs CRDSet = "config"
)

// CRDs decodes the embedded CRDs of the given set, in file-name order.
func CRDs(set CRDSet) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir := path.Join("crds", string(set))
	entries, err := fs.ReadDir(crdFS, dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded CRD set %q: %w", set, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() && path.Ext(e.Name()) == ".yaml" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(crdFS, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
