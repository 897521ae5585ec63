// Package install reads the release payload in install/ as the cluster
// version operator does (files by name, documents in order); its tests check
// the payload.
package install

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ImageReferencesFile lists the payload's images for release tooling.
const ImageReferencesFile = "image-references"

// Manifest is one document of a payload file.
type Manifest struct {
	File   string // base name
	Index  int    // among the file's non-empty documents, from 0
	Object *unstructured.Unstructured
}

// String names the manifest for messages: file[index] Kind namespace/name.
func (m Manifest) String() string {
	name := m.Object.GetName()
	if ns := m.Object.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s[%d] %s %s", m.File, m.Index, m.Object.GetKind(), name)
}

// Files returns the base names of the manifest files in dir, in apply order.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Load reads every manifest file in dir, in apply order (see Parse).
func Load(dir string) ([]Manifest, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	var all []Manifest
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		ms, err := Parse(f, data)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}

// Parse splits data into objects, each with apiVersion, kind and
// metadata.name; empty documents are skipped. file names them.
func Parse(file string, data []byte) ([]Manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Manifest
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if isEmptyDocument(doc) {
			continue
		}
		idx := len(out)
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, idx, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		var missing []string
		for _, f := range [][2]string{{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()}} {
			if f[1] == "" {
				missing = append(missing, f[0])
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s document %d: missing %s", file, idx, strings.Join(missing, ", "))
		}
		out = append(out, Manifest{File: file, Index: idx, Object: u})
	}
}

func isEmptyDocument(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
