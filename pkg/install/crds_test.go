package install_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

const machineCRDDir = "machine/v1beta1/zz_generated.crd-manifests"

// crdSources maps each CRD file of install/ to its source in openshift/api
// (the same table as hack/update-crds.sh).
func crdSources() map[string]string {
	m := map[string]string{}
	for _, fs := range featureSets {
		m[prefix+"02_machine."+fs+".crd.yaml"] = machineCRDDir + "/0000_10_machine-api_01_machines-" + fs + ".crd.yaml"
		m[prefix+"03_machineset."+fs+".crd.yaml"] = machineCRDDir + "/0000_10_machine-api_01_machinesets-" + fs + ".crd.yaml"
	}
	m[prefix+"07_machinehealthcheck.crd.yaml"] = machineCRDDir + "/0000_10_machine-api_01_machinehealthchecks.crd.yaml"
	return m
}

// openshiftAPIDir is github.com/openshift/api at the version go.mod pins, in
// the module cache (go mod download only reads the cache when it is there).
func openshiftAPIDir(t testing.TB) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/openshift/api")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/openshift/api: %v\n%s", err, stderr.String())
	}
	var mod struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("decoding go mod download output: %v", err)
	}
	if mod.Error != "" || mod.Dir == "" {
		t.Fatalf("locating github.com/openshift/api in the module cache: %q", mod.Error)
	}
	return mod.Dir
}

// compareCRD fails unless the copy is byte for byte the source: a CRD edited
// by hand, or re-serialized, is drift.
func compareCRD(name string, copied, source []byte) error {
	if bytes.Equal(copied, source) {
		return nil
	}
	a, b := strings.Split(string(copied), "\n"), strings.Split(string(source), "\n")
	line := 0
	for line < len(a) && line < len(b) && a[line] == b[line] {
		line++
	}
	return fmt.Errorf("%s differs from openshift/api from line %d (run make update-crds; never edit it by hand)", name, line+1)
}

func TestCRDsAreOpenShiftAPICopies(t *testing.T) {
	api := openshiftAPIDir(t)
	dir := payloadDir(t)
	sources := crdSources()

	// Every CRD file of the payload has a source, and every feature-set
	// variant openshift/api generates for Machine and MachineSet is shipped.
	files, err := filepath.Glob(filepath.Join(dir, "*.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := sources[filepath.Base(f)]; !ok {
			t.Errorf("%s has no openshift/api source", filepath.Base(f))
		}
	}
	for _, kind := range []string{"machines", "machinesets"} {
		variants, err := filepath.Glob(filepath.Join(api, machineCRDDir, "0000_10_machine-api_01_"+kind+"-*.crd.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(variants) != len(featureSets) {
			t.Errorf("openshift/api has %d %s CRD variants, the payload ships %d: update featureSets and hack/update-crds.sh", len(variants), kind, len(featureSets))
		}
	}

	for file, src := range sources {
		copied, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%v (run make update-crds)", err)
			continue
		}
		source, err := os.ReadFile(filepath.Join(api, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := compareCRD(file, copied, source); err != nil {
			t.Error(err)
		}
	}

	t.Run("a CRD changed by hand is detected", func(t *testing.T) {
		file := prefix + "02_machine.Default.crd.yaml"
		source, err := os.ReadFile(filepath.Join(api, sources[file]))
		if err != nil {
			t.Fatal(err)
		}
		edits := map[string][]byte{
			"field type":      bytes.Replace(source, []byte("type: string"), []byte("type: integer"), 1),
			"added comment":   append([]byte("# edited\n"), source...),
			"trailing space":  append(bytes.Clone(source), ' '),
			"annotation":      bytes.Replace(source, []byte("feature-set: Default"), []byte("feature-set: OKD"), 1),
			"reformatted tab": bytes.Replace(source, []byte("\n  "), []byte("\n\t"), 1),
		}
		for name, edited := range edits {
			if bytes.Equal(edited, source) {
				t.Fatalf("edit %q changed nothing", name)
			}
			if err := compareCRD(file, edited, source); err == nil {
				t.Errorf("edit %q was not detected", name)
			}
		}
		if err := compareCRD(file, bytes.Clone(source), source); err != nil {
			t.Errorf("an identical copy is reported as drift: %v", err)
		}
	})
}
