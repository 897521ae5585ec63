package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: "t"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a cluster

	cfg, err := Load(path)
	if err != nil || cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "t" {
		t.Fatalf("Load(path) = %+v, %v", cfg, err)
	}
	t.Setenv("KUBECONFIG", path)
	if cfg, err = Load(""); err != nil || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("Load(\"\") with $KUBECONFIG = %+v, %v", cfg, err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("Load(missing) error %v, want one naming --kubeconfig", err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "missing"))
	t.Setenv("HOME", dir)
	if _, err := Load(""); err == nil || !strings.Contains(err.Error(), "set --kubeconfig or $KUBECONFIG") {
		t.Fatalf("Load(\"\") without configuration: error %v, want one saying what to set", err)
	}
}
