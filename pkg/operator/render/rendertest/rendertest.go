// Package rendertest gives the tests of this project's binaries the
// containers that start them: every container of this project's image in the
// operator's golden renders (pkg/operator/render/testdata, one directory per
// platform and configuration) and in the install/ payload. A binary's test
// parses each container's args with the binary's own flag set, so a rendered
// flag the binary does not accept fails the build instead of crashing a pod.
package rendertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// OurImages are the repositories of this project's image in the golden
// renders' inputs (pkg/operator/render/cases_test.go) and in install/.
var OurImages = []string{
	"quay.io/openshift/origin-machine-api-operator",
	"quay.io/machine-api-operator/kubemark-machine-controllers",
}

// Container is one container that starts a binary.
type Container struct {
	// Source is the file and workload it comes from.
	Source string
	Name   string
	// Command and Args are the container's.
	Command, Args []string
}

// Containers returns every container of this project's image whose command
// is binary (for example "/machineset-controller"). It fails the test when
// there is none, so a test built on it cannot pass vacuously.
func Containers(t testing.TB, binary string) []Container {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..", "..", "..")
	var files []string
	for _, pattern := range []string{"pkg/operator/render/testdata/*/*.yaml", "install/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	var out []Container
	for _, f := range files {
		specs, err := podSpecs(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for src, spec := range specs {
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if len(c.Command) > 0 && c.Command[0] == binary && ours(c.Image) {
					rel, _ := filepath.Rel(root, f)
					out = append(out, Container{Source: rel + " " + src, Name: c.Name, Command: c.Command, Args: c.Args})
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no container of this project's image runs %s in the golden renders or install/", binary)
	}
	return out
}

func ours(image string) bool {
	for _, repo := range OurImages {
		if strings.HasPrefix(image, repo+":") || strings.HasPrefix(image, repo+"@") || image == repo {
			return true
		}
	}
	return false
}

// podSpecs returns the pod templates of the Deployments and DaemonSets in a
// (multi-document) YAML file, by kind/name.
func podSpecs(path string) (map[string]corev1.PodSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	specs := map[string]corev1.PodSpec{}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return specs, nil
			}
			return nil, err
		}
		if raw == nil {
			continue
		}
		kind, _ := raw["kind"].(string)
		if kind != "Deployment" && kind != "DaemonSet" {
			continue
		}
		doc, err := json.Marshal(raw)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := json.Unmarshal(doc, d); err != nil {
				return nil, err
			}
			specs["Deployment/"+d.Name] = d.Spec.Template.Spec
		case "DaemonSet":
			d := &appsv1.DaemonSet{}
			if err := json.Unmarshal(doc, d); err != nil {
				return nil, err
			}
			specs["DaemonSet/"+d.Name] = d.Spec.Template.Spec
		}
	}
}
