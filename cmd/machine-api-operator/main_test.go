package main

import (
	"bytes"
	"context"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s", code, errOut.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "MachineAPIOperator v0.0.0-dev") {
		t.Fatalf("unexpected version output %q", got)
	}
}

func TestUnknownFlagIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"version", "--no-such-flag"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "no-such-flag") || !strings.Contains(errOut.String(), "Usage:") {
		t.Fatalf("stderr lacks the flag name or usage: %s", errOut.String())
	}
}

func TestStartWithoutImagesJSONIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"start"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "--images-json") || !strings.Contains(errOut.String(), "Usage:") {
		t.Fatalf("stderr does not name --images-json or show usage: %s", errOut.String())
	}
}

func TestRenderWritesOneFilePerObject(t *testing.T) {
	dir := t.TempDir()
	images := filepath.Join(dir, "images.json")
	infra := filepath.Join(dir, "infra.yaml")
	out := filepath.Join(dir, "out")
	write(t, images, `{"machineAPIOperator": "example.io/mao:1", "clusterAPIControllerAWS": "example.io/aws:1", "unknownKey": "ignored"}`)
	write(t, infra, `apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  platformSpec:
    type: AWS
status:
  platformStatus:
    type: AWS
`)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"render", "--images-json", images, "--infrastructure", infra, "--output-dir", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	joined := strings.Join(names, "\n")
	for _, want := range []string{"machine-api-controllers", "machine-api-termination-handler", "machines.machine.openshift.io"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no file for %s in:\n%s", want, joined)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, names[len(names)-1]))
	if err != nil || !strings.Contains(string(data), "kind:") {
		t.Errorf("output file is not a YAML object: %v\n%s", err, data)
	}
}

func TestRenderBadImagesJSONNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	images := filepath.Join(dir, "images.json")
	infra := filepath.Join(dir, "infra.yaml")
	write(t, images, `{"machineAPIOperator": `)
	write(t, infra, "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata:\n  name: cluster\nstatus:\n  platformStatus:\n    type: AWS\n")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"render", "--images-json", images, "--infrastructure", infra, "--output-dir", filepath.Join(dir, "out")}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), images) {
		t.Fatalf("exit %d, stderr %q: want 1 and the file path", code, stderr.String())
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"strat"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, errOut.String())
	}
}

func TestNegativeDurationIsUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"start", "--images-json=/x", "--degraded-after=-1s"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, errOut.String())
	}
}

// TestBadLeaderElectionOrTLSIsUsageError: timings that would let two
// leaders act, and TLS settings Go does not know, are refused before start.
func TestBadLeaderElectionOrTLSIsUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"--leader-elect-renew-interval=31s"},
		{"--tls-min-version=TLS12"},
		{"--tls-cipher-suites=NOT_A_SUITE"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append([]string{"start", "--images-json=/x"}, args...), &out, &errOut); code != 2 {
			t.Errorf("%q: exit code %d, want 2; stderr: %s", args, code, errOut.String())
		}
	}
}

// TestPayloadCommandLinesStart: the operator's container in install/ has a
// command line the binary accepts (the operator itself is stubbed out).
func TestPayloadCommandLinesStart(t *testing.T) {
	for _, c := range rendertest.Containers(t, "/machine-api-operator") {
		started := false
		root := newRootCommandWith(io.Discard, io.Discard, func(context.Context, *startOptions, io.Writer) error {
			started = true
			return nil
		})
		root.SetArgs(c.Args)
		if err := root.ExecuteContext(context.Background()); err != nil || !started {
			t.Errorf("%s container %s: args %q refused: %v", c.Source, c.Name, c.Args, err)
		}
	}
}
