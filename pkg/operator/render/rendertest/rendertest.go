// Package rendertest gives a binary's tests every container of this
// project's image that starts it, in the golden renders and install/, so a
// rendered flag the binary refuses fails a test instead of crashing a pod.
package rendertest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// OurImages are the repositories of this project's image in the golden
// renders' inputs and in install/.
var OurImages = []string{
	"quay.io/openshift/origin-machine-api-operator",
	"quay.io/machine-api-operator/kubemark-machine-controllers",
}

// Container is one container that starts a binary.
type Container struct {
	Source        string // the file and workload it comes from
	Name          string
	Command, Args []string
}

// Containers returns every container of this project's image whose command is
// binary (e.g. "/machineset-controller"); none fails the test.
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
				ours := slices.ContainsFunc(OurImages, func(repo string) bool {
					return strings.HasPrefix(c.Image, repo+":") || strings.HasPrefix(c.Image, repo+"@") || c.Image == repo
				})
				if len(c.Command) > 0 && c.Command[0] == binary && ours {
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
		// The part a Deployment and a DaemonSet share.
		var w struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct{ Template corev1.PodTemplateSpec }
		}
		if err := dec.Decode(&w); errors.Is(err, io.EOF) {
			return specs, nil
		} else if err != nil {
			return nil, err
		}
		if w.Kind == "Deployment" || w.Kind == "DaemonSet" {
			specs[w.Kind+"/"+w.Metadata.Name] = w.Spec.Template.Spec
		}
	}
}
