package webhooks

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/testenv"
)

// warningRecorder keeps the API server's warnings.
type warningRecorder struct {
	mu    sync.Mutex
	texts []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *warningRecorder) HandleWarningHeader(code int, _, text string) {
	if code != 299 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, text)
}

// take returns the warnings received since the last take.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.texts
	r.texts = nil
	return out
}

// platformCase is a minimal MachineSet on a cluster of one platform.
type platformCase struct {
	platform configv1.PlatformType
	status   func(*configv1.PlatformStatus)
	// credentials is the credentials Secret created in the namespace.
	credentials string
	// minimal is what a user gives; want is what the API server stores
	// (OpenShift's defaults added); warnings are those of the create.
	minimal, want string
	warnings      []string
	// bad is refused with wantErr (field path and message).
	bad, wantErr string
}

func platformCases() []platformCase {
	azureVMSize, azureImage := azureDefaults()
	gcpMachineType, gcpImage := gcpDefaults()
	return []platformCase{
		{
			platform: configv1.AWSPlatformType,
			status: func(ps *configv1.PlatformStatus) {
				ps.AWS = &configv1.AWSPlatformStatus{Region: "us-east-2"}
			},
			credentials: "aws-cloud-credentials",
			minimal:     `{"ami":{"id":"ami-0123"},"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"worker-profile"}}`,
			want: `{"ami":{"id":"ami-0123"},"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"worker-profile"},"instanceType":"` + awsInstanceType() +
				`","placement":{"region":"us-east-2"},"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"aws-cloud-credentials"}}`,
			warnings: []string{"incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind="},
			bad:      `{"apiVersion":"machine.openshift.io/v1beta1","kind":"AWSMachineProviderConfig","placement":{"tenancy":"shared"}}`,
			wantErr:  `providerSpec.tenancy: Invalid value: "shared": Invalid providerSpec.tenancy, the only allowed options are: default, dedicated, host, or omitted`,
		},
		{
			platform: configv1.AzurePlatformType,
			status: func(ps *configv1.PlatformStatus) {
				ps.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzurePublicCloud, ResourceGroupName: testInfraName + "-rg"}
			},
			credentials: "azure-cloud-credentials",
			minimal:     `{"osDisk":{"diskSizeGB":128,"osType":"Linux"}}`,
			want: `{"osDisk":{"diskSizeGB":128,"osType":"Linux"},"vmSize":"` + azureVMSize + `","vnet":"test-x7k2p-vnet","subnet":"test-x7k2p-worker-subnet",` +
				`"image":` + azureImage + `,` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"azure-cloud-credentials","namespace":"openshift-machine-api"}}`,
			warnings: []string{"incorrect GroupVersionKind for AzureMachineProviderSpec object: /, Kind="},
			// The DNS has no public zone.
			bad:     `{"osDisk":{"diskSizeGB":128},"publicIP":true}`,
			wantErr: `providerSpec.publicIP: Forbidden: publicIP is not allowed in Azure disconnected installation with publish strategy as internal`,
		},
		{
			platform: configv1.GCPPlatformType,
			status: func(ps *configv1.PlatformStatus) {
				ps.GCP = &configv1.GCPPlatformStatus{ProjectID: "project-1", Region: "us-central1"}
			},
			credentials: "gcp-cloud-credentials",
			minimal: `{"region":"us-central1","zone":"us-central1-a",` +
				`"serviceAccounts":[{"email":"w@project-1.iam.gserviceaccount.com","scopes":["https://www.googleapis.com/auth/cloud-platform"]}]}`,
			want: `{"region":"us-central1","zone":"us-central1-a",` +
				`"serviceAccounts":[{"email":"w@project-1.iam.gserviceaccount.com","scopes":["https://www.googleapis.com/auth/cloud-platform"]}],` +
				`"machineType":"` + gcpMachineType + `","networkInterfaces":[{"network":"test-x7k2p-network","subnetwork":"test-x7k2p-worker-subnet"}],` +
				`"disks":[{"autoDelete":true,"boot":true,"sizeGb":128,"type":"pd-standard","image":"` + gcpImage + `","labels":null}],` +
				`"tags":["test-x7k2p-worker"],"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"gcp-cloud-credentials"}}`,
			warnings: []string{"incorrect GroupVersionKind for GCPMachineProviderSpec object: /, Kind="},
			bad:      `{"region":"us-central1","zone":"europe-west1-b"}`,
			wantErr:  `providerSpec.zone: Invalid value: "europe-west1-b": zone not in configured region (us-central1)`,
		},
		{
			platform:    configv1.VSpherePlatformType,
			credentials: "vsphere-cloud-credentials",
			minimal:     `{"template":"rhcos","workspace":{"server":"vcenter.example.com","datacenter":"dc"},"network":{"devices":[{"networkName":"vm-network"}]}}`,
			want: `{"template":"rhcos","workspace":{"server":"vcenter.example.com","datacenter":"dc"},"network":{"devices":[{"networkName":"vm-network"}]},` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"vsphere-cloud-credentials"}}`,
			warnings: []string{
				"incorrect GroupVersionKind for VSphereMachineProviderSpec object: /, Kind=",
				"providerSpec.numCPUs: 0 is missing or less than the minimum value (2): nodes may not boot correctly",
				"providerSpec.memoryMiB: 0 is missing or less than the recommended minimum value (2048): nodes may not boot correctly",
				"providerSpec.diskGiB: 0 is missing or less than the recommended minimum (120): nodes may fail to start if disk size is too low",
			},
			bad:     `{"template":"rhcos","workspace":{"server":"vcenter.example.com","datacenter":"dc"},"network":{"devices":[{}]}}`,
			wantErr: `providerSpec.network.devices[0].networkName: Required value: networkName must be provided`,
		},
		{
			platform:    configv1.PowerVSPlatformType,
			credentials: "powervs-credentials",
			minimal:     `{"keyPairName":"k","serviceInstance":{"type":"ID","id":"si"},"image":{"type":"Name","name":"rhcos"},"network":{"type":"RegEx","regex":"^net"}}`,
			want: `{"keyPairName":"k","serviceInstance":{"type":"ID","id":"si"},"image":{"type":"Name","name":"rhcos"},"network":{"type":"RegEx","regex":"^net"},` +
				`"systemType":"s922","processorType":"Shared","processors":"0.5","memoryGiB":32,` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"powervs-credentials"}}`,
			bad:     `{"keyPairName":"k","serviceInstance":{"type":"ID","id":"si"},"image":{"type":"RegEx","regex":"rhcos"},"network":{"type":"Name","name":"n"}}`,
			wantErr: `providerSpec.image: Invalid value: "RegEx": image identifier is specified as RegEx but only ID and Name are valid resource identifiers`,
		},
		{
			platform:    configv1.NutanixPlatformType,
			credentials: "nutanix-credentials",
			minimal: `{"cluster":{"type":"name","name":"pe"},"image":{"type":"name","name":"rhcos"},"subnets":[{"type":"uuid","uuid":"s-1"}],` +
				`"vcpuSockets":4,"vcpusPerSocket":1,"memorySize":"16Gi","systemDiskSize":"120Gi"}`,
			want: `{"cluster":{"type":"name","name":"pe"},"image":{"type":"name","name":"rhcos"},"subnets":[{"type":"uuid","uuid":"s-1"}],` +
				`"vcpuSockets":4,"vcpusPerSocket":1,"memorySize":"16Gi","systemDiskSize":"120Gi",` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"nutanix-credentials"}}`,
			bad:     `{"cluster":{"type":"name","name":"pe"},"image":{"type":"name","name":"rhcos"},"subnets":[]}`,
			wantErr: `providerSpec.subnets: Invalid value: "[]": missing subnets: nodes may fail to start if no subnets are configured`,
		},
	}
}

// TestPlatformsThroughAPIServer: on a cluster of each platform, a minimal
// MachineSet created with dry-run=server comes back with OpenShift's
// defaults, and a bad one is refused naming the field. The webhooks read
// through a cache namespaced like the machineset-controller's (Secrets by
// metadata, the Infrastructure and DNS cluster-wide).
func TestPlatformsThroughAPIServer(t *testing.T) {
	const ns = "openshift-machine-api"
	warnings := &warningRecorder{}
	c, reader := startWithMachineNamespace(t, ns, apiServerOptions{
		warnings: warnings,
		crdPaths: []string{filepath.Join(openshiftAPIDir(t), "config", "v1", "zz_generated.crd-manifests", "0000_10_config-operator_01_dnses-Default.crd.yaml")},
	})
	ctx := context.Background()
	// Published internally only: an Azure public IP is refused.
	dns := &configv1.DNS{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: configv1.DNSSpec{BaseDomain: "example.com"}}
	if err := c.Create(ctx, dns); err != nil {
		t.Fatalf("creating the DNS: %v", err)
	}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
	createDryRun := func(t *testing.T, name, providerSpec string) ([]byte, error) {
		t.Helper()
		ms := machineSet(name, sel, sel, value(providerSpec))
		ms.Namespace = ns
		err := c.Create(ctx, ms, client.DryRunAll)
		if err != nil {
			return nil, err
		}
		if ms.Labels[ClusterIDLabel] != testInfraName {
			t.Errorf("labels = %v, want the cluster label", ms.Labels)
		}
		return ms.Spec.Template.Spec.ProviderSpec.Value.Raw, nil
	}
	for _, tc := range platformCases() {
		t.Run(string(tc.platform), func(t *testing.T) {
			setPlatform(t, c, reader, tc.platform, tc.status)
			createSecret(t, c, reader, ns, tc.credentials)
			warnings.take()
			got, err := createDryRun(t, "workers", tc.minimal)
			if err != nil {
				t.Fatalf("creating a minimal MachineSet: %v", err)
			}
			jsonEqual(t, got, tc.want)
			if got := warnings.take(); !reflect.DeepEqual(got, tc.warnings) {
				t.Errorf("warnings:\n got  %q\n want %q", got, tc.warnings)
			}
			_, err = createDryRun(t, "bad", tc.bad)
			if err == nil || !strings.Contains(err.Error(), `admission webhook "validation.machineset.machine.openshift.io" denied the request`) ||
				!strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("creating a bad MachineSet: %v, want refused with %q", err, tc.wantErr)
			}
		})
	}

	t.Run("a missing credentials Secret is a warning", func(t *testing.T) {
		setPlatform(t, c, reader, configv1.AWSPlatformType, func(ps *configv1.PlatformStatus) {
			ps.AWS = &configv1.AWSPlatformStatus{Region: "us-east-2"}
		})
		warnings.take()
		if _, err := createDryRun(t, "workers", `{"ami":{"id":"ami-0123"},"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"p"},"credentialsSecret":{"name":"elsewhere"}}`); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"incorrect GroupVersionKind for AWSMachineProviderConfig object: /, Kind=",
			`providerSpec.credentialsSecret: Invalid value: "elsewhere": not found. Expected CredentialsSecret to exist`,
		}
		if got := warnings.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("warnings:\n got  %q\n want %q", got, want)
		}
	})
}

// awsRefusalCases are Machines OpenShift's webhooks refuse on AWS, each with its one error: the
// providerSpec patch (top-level keys over a minimal valid value) and the Machine's labels.
var awsRefusalCases = []struct {
	name, patch string
	labels      map[string]string
	wantErr     string
}{
	{name: "spot options with a capacity reservation", patch: `{"spotMarketOptions":{},"capacityReservationId":"cr-0123456789abcdef0"}`,
		wantErr: `providerSpec.capacityReservationId: Invalid value: "cr-0123456789abcdef0": spotMarketOptions and capacityReservationID may not be used together`},
	{name: "a control-plane Machine on a dedicated host",
		patch:   `{"placement":{"tenancy":"host","host":{"affinity":"DedicatedHost","dedicatedHost":{"id":"h-0123456789abcdef0"}}}}`,
		labels:  map[string]string{"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master"},
		wantErr: `spec.placement.tenancy: Forbidden: dedicated host tenancy is not supported for control plane machines`},
	{name: "capacityReservationId fooobaar", patch: `{"capacityReservationId":"fooobaar"}`,
		wantErr: `providerSpec.capacityReservationId: Invalid value: "fooobaar": invalid value for capacityReservationId: "fooobaar", it must start with 'cr-' and be exactly 20 characters long with 17 hexadecimal characters`},
	{name: "marketType Bogus", patch: `{"marketType":"Bogus"}`,
		wantErr: `providerSpec.marketType: Invalid value: "Bogus": invalid marketType: Bogus valid values are: OnDemand, Spot, CapacityBlock and omitted`},
	{name: "placementGroupPartition 9", patch: `{"placementGroupName":"pg","placementGroupPartition":9}`,
		wantErr: `providerSpec.placementGroupPartition: Invalid value: 9: providerSpec.placementGroupPartition must be between 1 and 7`},
	{name: "throughputMib on a gp2 volume", patch: `{"blockDevices":[{"ebs":{"volumeType":"gp2","volumeSize":120,"throughputMib":250}}]}`,
		wantErr: `providerSpec.blockDevices[0].ebs.throughputMib: Invalid value: 250: only valid for gp3 volumes`},
	{name: "an empty cpuOptions", patch: `{"cpuOptions":{}}`,
		wantErr: `providerSpec.CPUOptions: Invalid value: "{}": At least one field must be set if cpuOptions is provided`},
	{name: "a host placement without host tenancy", patch: `{"placement":{"tenancy":"dedicated","host":{"affinity":"AnyAvailable"}}}`,
		wantErr: `spec.placement.host: Forbidden: host may only be specified when tenancy is 'host'`},
}

// TestAWSRefusalsThroughAPIServer: on an AWS cluster, the API server refuses with OpenShift's messages what
// OpenShift's webhooks refuse (issue 32's values, from OpenShift's e2e), admits a worker on a dedicated host,
// completes an unnamed user-data reference, and refuses a Machine or MachineSet without a providerSpec value
// in the defaulting webhook, as OpenShift's, with that one error.
func TestAWSRefusalsThroughAPIServer(t *testing.T) {
	const ns = "openshift-machine-api"
	c, reader := startWithMachineNamespace(t, ns, apiServerOptions{})
	ctx := context.Background()
	setPlatform(t, c, reader, configv1.AWSPlatformType, func(ps *configv1.PlatformStatus) {
		ps.AWS = &configv1.AWSPlatformStatus{Region: "us-east-2"}
	})
	createSecret(t, c, reader, ns, "aws-cloud-credentials")
	const minimal = `{"ami":{"id":"ami-0123"},"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"worker-profile"}}`
	create := func(t *testing.T, ps machinev1beta1.ProviderSpec, labels map[string]string) (*machinev1beta1.Machine, error) {
		t.Helper()
		m := machine("m", ps, func(m *machinev1beta1.Machine) { m.Labels = labels })
		return m, c.Create(ctx, m, client.DryRunAll)
	}
	for _, tc := range awsRefusalCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := create(t, value(with(t, minimal, tc.patch)), tc.labels)
			var status *apierrors.StatusError
			if !errors.As(err, &status) || !strings.HasPrefix(err.Error(), `admission webhook "validation.machine.machine.openshift.io" denied the request: `) ||
				!strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("creating the Machine: %v, want refused with %q", err, tc.wantErr)
			}
			if d := status.ErrStatus.Details; d == nil || len(d.Causes) != 1 {
				t.Errorf("causes = %+v, want only %q", d, tc.wantErr)
			}
		})
	}
	t.Run("a worker on a dedicated host, an unnamed user-data reference", func(t *testing.T) {
		m, err := create(t, value(with(t, minimal, `{"userDataSecret":{},"placement":{"tenancy":"host","host":{"affinity":"AnyAvailable"}}}`)),
			map[string]string{"machine.openshift.io/cluster-api-machine-role": "worker"})
		if err != nil {
			t.Fatalf("creating the Machine: %v", err)
		}
		jsonEqual(t, m.Spec.ProviderSpec.Value.Raw, `{"ami":{"id":"ami-0123"},"subnet":{"id":"subnet-1"},"iamInstanceProfile":{"id":"worker-profile"},`+
			`"instanceType":"`+awsInstanceType()+`","placement":{"region":"us-east-2","tenancy":"host","host":{"affinity":"AnyAvailable"}},`+
			`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"aws-cloud-credentials"}}`)
	})
	t.Run("no providerSpec value", func(t *testing.T) {
		sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
		ms := machineSet("workers", sel, sel, value(""))
		for _, tc := range []struct {
			obj     client.Object
			webhook string
		}{
			{machine("m", value("")), "default.machine.machine.openshift.io"},
			{ms, "default.machineset.machine.openshift.io"},
			{machineDeployment(value("")), "default.machinedeployment.machine.openshift.io"},
		} {
			// Breaks if: the defaulting webhook admits it (the validating one then refuses 422 with two errors).
			err := c.Create(ctx, tc.obj, client.DryRunAll)
			want := `admission webhook "` + tc.webhook + `" denied the request: providerSpec.value: Required value: a value must be provided`
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Errorf("creating a %T without a value: %v, want 403 %q", tc.obj, err, want)
			}
		}
	})
}

// startCache starts a cache of the Machine API namespace ns, as the
// startWithMachineNamespace starts the API server with the webhooks (opts), their reader a cache of
// ns, and creates ns.
func startWithMachineNamespace(t *testing.T, ns string, opts apiServerOptions) (client.Client, client.Reader) {
	t.Helper()
	var reader client.Reader
	opts.reader = func(t *testing.T, cfg *rest.Config, _ client.Client) client.Reader {
		reader = startCache(t, cfg, ns)
		return reader
	}
	c := startAPIServerWithWebhooks(t, opts)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return c, reader
}

// machineset-controller's manager has.
func startCache(t *testing.T, cfg *rest.Config, ns string) client.Reader {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, c)
	return c
}

// createSecret creates the Secret ns/name (if missing) and waits until
// reader has it.
func createSecret(t *testing.T, c client.Client, reader client.Reader, ns, name string) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitFor(t, "the cache to hold Secret "+name, func() bool {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m) == nil
	})
}

func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return done(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// openshiftAPIDir is github.com/openshift/api at the version go.mod pins,
// in the module cache.
func openshiftAPIDir(t *testing.T) string {
	t.Helper()
	dir, err := testenv.ModuleDir("github.com/openshift/api")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// setPlatform makes the Infrastructure "cluster" describe a cluster of
// platform p (status filled in as the installer does) and waits until
// reader sees it.
func setPlatform(t *testing.T, c client.Client, reader client.Reader, p configv1.PlatformType, status func(*configv1.PlatformStatus)) {
	t.Helper()
	ctx := context.Background()
	infra := infrastructure("", p, "", "")
	if err := c.Delete(ctx, infra); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	infra = infrastructure("", p, "", "")
	if err := c.Create(ctx, infra); err != nil {
		t.Fatalf("creating the Infrastructure: %v", err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:     testInfraName,
		ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
		InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
		PlatformStatus:         &configv1.PlatformStatus{Type: p},
	}
	if status != nil {
		status(infra.Status.PlatformStatus)
	}
	if err := c.Status().Update(ctx, infra); err != nil {
		t.Fatalf("setting the Infrastructure status: %v", err)
	}
	want := infra.ResourceVersion
	waitFor(t, "the cache to hold the "+string(p)+" Infrastructure", func() bool {
		got := &configv1.Infrastructure{}
		return reader.Get(ctx, client.ObjectKeyFromObject(infra), got) == nil && got.ResourceVersion == want
	})
}
