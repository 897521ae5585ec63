package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render"
)

type renderOptions struct {
	imagesJSON     string
	infrastructure string
	featureGate    string
	proxy          string
	namespace      string
	releaseVersion string
	serviceCA      bool
	outputDir      string
}

func newRenderCommand(stdout io.Writer) *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Write the objects `start` would apply, one YAML file per object, without a cluster",
		Long: `render builds the same configuration as start from files instead of the cluster
(images.json, an Infrastructure YAML, optionally a FeatureGate and a Proxy YAML) and
writes every object start would apply into --output-dir, one YAML file per object,
prefixed with its apply order. Certificates the operator would issue at run time are
not generated: webhook configurations carry no caBundle unless --service-ca is set.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch {
			case o.imagesJSON == "":
				return usageError{errors.New("--images-json is required")}
			case o.infrastructure == "":
				return usageError{errors.New("--infrastructure is required: an Infrastructure YAML (config.openshift.io/v1)")}
			case o.outputDir == "":
				return usageError{errors.New("--output-dir is required")}
			}
			return runRender(o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.imagesJSON, "images-json", "", "Path to images.json (required).")
	f.StringVar(&o.infrastructure, "infrastructure", "", "Path to the Infrastructure \"cluster\" YAML (required).")
	f.StringVar(&o.featureGate, "feature-gate", "", "Path to a FeatureGate \"cluster\" YAML (optional).")
	f.StringVar(&o.proxy, "proxy", "", "Path to a Proxy \"cluster\" YAML (optional).")
	f.StringVar(&o.namespace, "namespace", config.DefaultNamespace, "Namespace of the operands.")
	f.StringVar(&o.releaseVersion, "release-version", os.Getenv("RELEASE_VERSION"), "Release version (default $RELEASE_VERSION).")
	f.BoolVar(&o.serviceCA, "service-ca", false, "Render for OpenShift: service-ca issues the webhook certificates and the cluster version operator installs the Machine API CRDs.")
	f.StringVar(&o.outputDir, "output-dir", "", "Directory to write the YAML files to (required; created if missing).")
	return cmd
}

func runRender(o *renderOptions, stdout io.Writer) error {
	in := config.Inputs{Namespace: o.namespace, ReleaseVersion: o.releaseVersion, Webhook: config.WebhookTLS{ServiceCA: o.serviceCA}, OpenShift: o.serviceCA}
	in.Images, in.ImagesErr = config.LoadImages(o.imagesJSON)
	var err error
	if in.Infrastructure, err = readYAML[configv1.Infrastructure](o.infrastructure); err != nil {
		return err
	}
	if in.FeatureGate, err = readYAML[configv1.FeatureGate](o.featureGate); err != nil {
		return err
	}
	if in.Proxy, err = readYAML[configv1.Proxy](o.proxy); err != nil {
		return err
	}
	cfg, err := config.Build(in)
	if err != nil {
		return err
	}
	objs, err := render.Render(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.outputDir, 0o755); err != nil {
		return fmt.Errorf("creating --output-dir: %w", err)
	}
	for i, obj := range objs {
		data, err := render.ToYAML(obj)
		if err != nil {
			return err
		}
		name := render.FileName(i, obj)
		if err := os.WriteFile(filepath.Join(o.outputDir, name), data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	note := ""
	if cfg.NoOp {
		note = " (NoOp: " + cfg.NoOpReason + "; only the CRDs)"
	}
	_, err = fmt.Fprintf(stdout, "wrote %d objects for %s into %s%s\n", len(objs), cfg.Describe(), o.outputDir, note)
	return err
}

// readYAML decodes the object in path; nil for no path.
func readYAML[T any](path string) (*T, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	into := new(T)
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return into, nil
}
