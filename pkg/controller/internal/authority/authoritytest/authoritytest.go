// Package authoritytest gives envtests the Machine and MachineSet CRDs with
// the authoritativeAPI fields (install/'s TechPreviewNoUpgrade ones).
package authoritytest

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

var files = []string{
	"0000_30_machine-api-operator_02_machine.TechPreviewNoUpgrade.crd.yaml",
	"0000_30_machine-api-operator_03_machineset.TechPreviewNoUpgrade.crd.yaml",
}

// Options returns testenv options installing those CRDs over the Default ones.
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
