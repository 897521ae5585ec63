package render

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/render/rendertest"
)

// klogFlags are the flags every OpenShift image gets from klog.
var klogFlags = []string{"v", "logtostderr", "alsologtostderr", "stderrthreshold", "vmodule", "log_dir", "log_file",
	"log_file_max_size", "one_output", "skip_headers", "skip_log_headers", "add_dir_header", "log_backtrace_at"}

// The flag lists below are of OpenShift's images, which this project does not
// build: they are read from each image's source (for example
// openshift/machine-api-provider-aws cmd/manager/main.go and
// cmd/termination-handler/main.go, brancz/kube-rbac-proxy's options). This
// project's own binaries are checked against their real flag sets instead
// (ownBinaries).

// openShiftProviderFlags are the flags OpenShift's provider images define
// (besides klog's): the manager flags every machine controller shares.
// --health-probe-bind-address, --kube-api-qps, --metrics-cert-dir and the
// like are this project's and unknown to them: Go's flag package exits on
// an unknown flag.
var openShiftProviderFlags = []string{"namespace", "leader-elect", "leader-elect-lease-duration",
	"leader-elect-resource-namespace", "health-addr", "metrics-bind-address", "feature-gates"}

// providerFlagSets are the flags each provider image accepts.
var providerFlagSets = map[string][]string{
	"aws":       openShiftProviderFlags,
	"azure":     append(slices.Clone(openShiftProviderFlags), "max-concurrent-reconciles"),
	"gcp":       append(slices.Clone(openShiftProviderFlags), "max-concurrent-reconciles"),
	"openstack": openShiftProviderFlags,
	"baremetal": append(slices.Clone(openShiftProviderFlags), "tls-min-version", "tls-cipher-suites"),
	"ibmcloud":  openShiftProviderFlags,
	"powervs":   openShiftProviderFlags,
	"nutanix":   openShiftProviderFlags,
}

// terminationHandlerFlags are the flags of /termination-handler in the AWS,
// Azure and GCP images (each image's cmd/termination-handler/main.go).
var terminationHandlerFlags = []string{"node-name", "namespace", "poll-interval-seconds"}

// ownBinaries are the commands of this project's image. Each binary's
// TestRenderedCommandLinesStart (cmd/<binary>/main_test.go) parses the args
// of every such container in these golden renders with the binary's own
// flag set (package rendertest).
var ownBinaries = []string{"/machine-controller-manager", "/machineset-controller", "/nodelink-controller", "/machine-healthcheck"}

// kubeRBACProxyFlags are the flags of OpenShift's kube-rbac-proxy image the
// sidecar may use.
var kubeRBACProxyFlags = []string{"secure-listen-address", "upstream", "tls-cert-file", "tls-private-key-file",
	"tls-min-version", "tls-cipher-suites", "config-file"}

const (
	defaultGates = "--feature-gates=AWSDedicatedHosts=false,AzureWorkloadIdentity=false,MachineAPIMigration=false,VSphereHostVMGroupZonal=false"
	intermediate = "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256," +
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384," +
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
)

var openShiftArgs = []string{"--logtostderr=true", "--v=3", "--leader-elect=true", "--leader-elect-lease-duration=120s",
	"--namespace=openshift-machine-api", defaultGates}

// TestProviderFlagContract reads the golden render of every platform with a
// provider image and checks the machine-controller container field by field
// against what that image accepts and serves: the exact arguments OpenShift's
// operator renders (each a flag the image defines), its health port 9440
// (probed on /healthz and /readyz), the webhook port 8440, and its metrics
// behind the kube-rbac-proxy sidecar.
func TestProviderFlagContract(t *testing.T) {
	wantArgs := map[string][]string{
		"aws":       openShiftArgs,
		"azure":     append(slices.Clone(openShiftArgs), "--max-concurrent-reconciles=10"),
		"gcp":       append(slices.Clone(openShiftArgs), "--max-concurrent-reconciles=10"),
		"openstack": openShiftArgs,
		"baremetal": append(slices.Clone(openShiftArgs), intermediate, "--tls-min-version=VersionTLS12"),
		"ibmcloud":  openShiftArgs,
		"powervs":   openShiftArgs,
		"nutanix":   openShiftArgs,
	}
	images := map[string]string{
		"aws": testImages.ClusterAPIControllerAWS, "azure": testImages.ClusterAPIControllerAzure, "gcp": testImages.ClusterAPIControllerGCP,
		"openstack": testImages.ClusterAPIControllerOpenStack, "baremetal": testImages.ClusterAPIControllerBareMetal,
		"ibmcloud": testImages.ClusterAPIControllerIBMCloud, "powervs": testImages.ClusterAPIControllerPowerVS, "nutanix": testImages.ClusterAPIControllerNutanix,
	}
	for platform, accepted := range providerFlagSets {
		t.Run(platform, func(t *testing.T) {
			d := goldenDeployment(t, platform)
			c := podContainer(t, d, MachineContainer)
			if c.Image != images[platform] {
				t.Errorf("image %q, want %q", c.Image, images[platform])
			}
			if !slices.Equal(c.Command, []string{"/machine-controller-manager"}) {
				t.Errorf("command %q", c.Command)
			}
			for _, a := range c.Args {
				if name := flagName(t, a); !slices.Contains(accepted, name) && !slices.Contains(klogFlags, name) {
					t.Errorf("arg %s: the %s provider image defines no flag %q (it would exit)", a, platform, name)
				}
			}
			if !slices.Equal(c.Args, wantArgs[platform]) {
				t.Errorf("args\n  %q\nwant OpenShift's\n  %q", c.Args, wantArgs[platform])
			}
			ports := map[int32]bool{}
			for _, p := range c.Ports {
				ports[p.ContainerPort] = true
			}
			if len(ports) != 2 || !ports[9440] || !ports[8440] {
				t.Errorf("ports %+v, want the health port 9440 and the webhook port 8440 the image serves", c.Ports)
			}
			for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromInt32(9440) ||
					(p.HTTPGet.Path != "/healthz" && p.HTTPGet.Path != "/readyz") {
					t.Errorf("%s probe %+v, want /healthz or /readyz on 9440", what, p)
				}
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
			}
			if !env["NODE_NAME"] || !env["RELEASE_VERSION"] {
				t.Errorf("env %+v lacks NODE_NAME or RELEASE_VERSION", c.Env)
			}

			proxy := podContainer(t, d, ProviderMetricsProxyContainer)
			if proxy.Image != testImages.KubeRBACProxy {
				t.Errorf("metrics proxy image %q", proxy.Image)
			}
			for _, a := range proxy.Args {
				if name := flagName(t, a); !slices.Contains(kubeRBACProxyFlags, name) && !slices.Contains(klogFlags, name) {
					t.Errorf("metrics proxy arg %s: kube-rbac-proxy defines no flag %q", a, name)
				}
			}
			if !slices.Contains(proxy.Args, "--upstream=http://localhost:8081/") {
				t.Errorf("metrics proxy args %q do not proxy the provider's metrics address :8081", proxy.Args)
			}
			if len(proxy.Ports) != 1 || proxy.Ports[0].Name != machineMetricsName {
				t.Errorf("metrics proxy ports %+v, want %s", proxy.Ports, machineMetricsName)
			}
		})
	}

	// The OpenShift variants (cluster TLS profile, feature gates, trusted CA):
	// still only flags the image defines.
	for dir, platform := range map[string]string{"openshift-baremetal": "baremetal", "openshift-aws-modern-tls": "aws"} {
		t.Run(dir, func(t *testing.T) {
			c := podContainer(t, goldenDeployment(t, dir), MachineContainer)
			for _, a := range c.Args {
				if name := flagName(t, a); !slices.Contains(providerFlagSets[platform], name) && !slices.Contains(klogFlags, name) {
					t.Errorf("arg %s: the %s provider image defines no flag %q (it would exit)", a, platform, name)
				}
			}
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
			}
			if mounts["trusted-ca"] != "/etc/pki/ca-trust/extracted/pem" || mounts["bound-sa-token"] != "/var/run/secrets/openshift/serviceaccount" {
				t.Errorf("mounts %v, want OpenShift's trusted-ca and bound-sa-token", mounts)
			}
		})
	}

	t.Run("the check fails on a flag the image does not define", func(t *testing.T) {
		name := flagName(t, "--health-probe-bind-address=:9440")
		if slices.Contains(providerFlagSets["aws"], name) {
			t.Error("the AWS flag set accepts --health-probe-bind-address")
		}
	})
}

// flagName is the name of a --name=value or --name argument.
func flagName(t *testing.T, arg string) string {
	t.Helper()
	if !strings.HasPrefix(arg, "--") {
		t.Errorf("argument %q is not a --flag", arg)
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return name
}

// goldenDeployment reads the operand Deployment of a golden render case.
func goldenDeployment(t *testing.T, dir string) *appsv1.Deployment {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*_deployment_*.yaml"))
	if err != nil || len(files) != 1 {
		t.Fatalf("testdata/%s: want one Deployment, found %v (%v)", dir, files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(data, d); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	return d
}

func podContainer(t *testing.T, d *appsv1.Deployment, name string) *corev1.Container {
	t.Helper()
	c := container(t, d, name)
	if c == nil {
		t.Fatalf("no container %s", name)
	}
	return c
}

// TestVSphereRunsThisProjectsMachineController: on vSphere the
// machine-controller container runs clusterAPIControllerVSphere (the
// operator's own image, as in OpenShift's payload) as this project's
// binary: OpenShift's operand arguments and feature gates first, then this
// binary's own flags (health and HTTPS metrics addresses, client limits),
// its metrics served by itself (no kube-rbac-proxy sidecar), no Node
// creation rights. Breaks if: VSphere rendered only CRDs (unsupported) or
// the provider-image container (whose plain-HTTP metrics sidecar cannot
// reach this binary's HTTPS metrics).
func TestVSphereRunsThisProjectsMachineController(t *testing.T) {
	d := goldenDeployment(t, "vsphere")
	c := podContainer(t, d, MachineContainer)
	if c.Image != testImages.ClusterAPIControllerVSphere || !slices.Equal(c.Command, []string{"/machine-controller-manager"}) {
		t.Errorf("image %q command %q, want %q /machine-controller-manager", c.Image, c.Command, testImages.ClusterAPIControllerVSphere)
	}
	if len(c.Args) < 5 || !slices.Equal(c.Args[:5], openShiftArgs[:5]) {
		t.Errorf("args %q do not start with OpenShift's %q", c.Args, openShiftArgs[:5])
	}
	for _, want := range []string{defaultGates, "--health-probe-bind-address=:9440", "--metrics-bind-address=:8081"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %q lack %s", c.Args, want)
		}
	}
	if container(t, d, ProviderMetricsProxyContainer) != nil {
		t.Errorf("a %s sidecar in front of this project's own metrics", ProviderMetricsProxyContainer)
	}
}

// TestEveryRenderedContainerHasAFlagContract: every container of every golden
// render runs one of this project's binaries (whose own flag set checks its
// args) or an OpenShift image whose flags are listed above, and then uses
// only those flags. A container of neither kind fails, so a new one cannot
// skip the check.
func TestEveryRenderedContainerHasAFlagContract(t *testing.T) {
	providerOf := map[string]string{
		testImages.ClusterAPIControllerAWS: "aws", testImages.ClusterAPIControllerAzure: "azure", testImages.ClusterAPIControllerGCP: "gcp",
		testImages.ClusterAPIControllerOpenStack: "openstack", testImages.ClusterAPIControllerBareMetal: "baremetal",
		testImages.ClusterAPIControllerIBMCloud: "ibmcloud", testImages.ClusterAPIControllerPowerVS: "powervs", testImages.ClusterAPIControllerNutanix: "nutanix",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden renders: %v", err)
	}
	checked := 0
	for _, f := range files {
		for _, c := range goldenContainers(t, f) {
			checked++
			var accepted []string
			command := strings.Join(c.Command, " ")
			switch {
			case ownImage(c.Image):
				if !slices.Contains(ownBinaries, command) {
					t.Errorf("%s container %s: command %q is none of this project's binaries %q", f, c.Name, command, ownBinaries)
				}
				continue
			case c.Image == testImages.KubeRBACProxy:
				accepted = kubeRBACProxyFlags
			case providerOf[c.Image] != "" && command == "/termination-handler":
				accepted = terminationHandlerFlags
			case providerOf[c.Image] != "" && command == "/machine-controller-manager":
				accepted = providerFlagSets[providerOf[c.Image]]
			default:
				t.Errorf("%s container %s: no flag contract for image %q command %q", f, c.Name, c.Image, command)
				continue
			}
			for _, a := range c.Args {
				if name := flagName(t, a); !slices.Contains(accepted, name) && !slices.Contains(klogFlags, name) {
					t.Errorf("%s container %s: arg %s: image %s defines no flag %q (it would exit)", f, c.Name, a, c.Image, name)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no container in the golden renders")
	}
}

func ownImage(image string) bool {
	for _, repo := range rendertest.OurImages {
		if strings.HasPrefix(image, repo+":") {
			return true
		}
	}
	return false
}

// goldenContainers returns the containers (init containers too) of the
// Deployment or DaemonSet in a golden file, none for other kinds.
func goldenContainers(t *testing.T, file string) []corev1.Container {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kind struct{ Kind string }
	if err := yaml.Unmarshal(data, &kind); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var spec corev1.PodSpec
	switch kind.Kind {
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(data, d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		spec = d.Spec.Template.Spec
	case "DaemonSet":
		ds := &appsv1.DaemonSet{}
		if err := yaml.UnmarshalStrict(data, ds); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		spec = ds.Spec.Template.Spec
	default:
		return nil
	}
	return append(spec.InitContainers, spec.Containers...)
}

// TestEveryTLSServerFollowsTheProfile: in every render, each container that serves TLS and takes the
// flags (this project's binaries, the kube-rbac-proxy sidecar, BareMetal's provider image, as OpenShift
// passes them) has exactly the cluster profile's --tls-min-version and --tls-cipher-suites; any other
// provider image has none (it would exit). The profiles differ across the cases (Old, Modern, default).
// Breaks if: a container of this project's image, or the sidecar, is rendered without TLSArgs, or a
// provider image other than BareMetal's gets them.
func TestEveryTLSServerFollowsTheProfile(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range renderCases() {
		cfg, objs := mustRender(t, tc.in)
		want := TLSArgs(cfg.TLS)
		seen[strings.Join(want, " ")] = true
		for _, o := range objs {
			d, ok := o.(*appsv1.Deployment)
			if !ok {
				continue
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				takesTLS := c.Image == cfg.Images.MachineAPIOperator || c.Name == ProviderMetricsProxyContainer ||
					c.Name == MachineContainer && (providerIsOurs(cfg) || cfg.PlatformType == configv1.BareMetalPlatformType)
				var got []string
				for _, a := range c.Args {
					if strings.HasPrefix(a, "--tls-min-version=") || strings.HasPrefix(a, "--tls-cipher-suites=") {
						got = append(got, a)
					}
				}
				if !takesTLS {
					want := []string(nil)
					if !slices.Equal(got, want) {
						t.Errorf("%s: container %s (%s) has TLS flags %q: its image does not define them", tc.name, c.Name, c.Image, got)
					}
					continue
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: container %s has TLS flags %q, want the profile's %q", tc.name, c.Name, got, want)
				}
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("the render cases cover %d TLS profiles, want at least 3 (default, Old, Modern): %v", len(seen), seen)
	}
}
