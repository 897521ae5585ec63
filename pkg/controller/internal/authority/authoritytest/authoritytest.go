// Package authoritytest gives envtests the CRD variant that has the
// authoritativeAPI fields: the Machine and MachineSet CRDs of the
// TechPreviewNoUpgrade feature set, as install/ ships them.
package authoritytest

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// files are the install/ manifests of that variant.
var files = []string{
	"0000_30_machine-api-operator_02_machine.TechPreviewNoUpgrade.crd.yaml",
	"0000_30_machine-api-operator_03_machineset.TechPreviewNoUpgrade.crd.yaml",
}

// Options returns testenv options that install the TechPreviewNoUpgrade
// Machine and MachineSet CRDs over the Default ones.
func Options() (testenv.Options, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return testenv.Options{}, err
	}
	var opts testenv.Options
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, "install", f))
		if err != nil {
			return opts, fmt.Errorf("reading the TechPreviewNoUpgrade CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return opts, fmt.Errorf("decoding %s: %w", f, err)
		}
		opts.ExtraCRDs = append(opts.ExtraCRDs, crd)
	}
	return opts, nil
}
