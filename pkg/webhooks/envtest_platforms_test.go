package webhooks

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
			wantErr:  `providerSpec.tenancy: Invalid value: "shared": Invalid providerSpec.tenancy, the only allowed options are: default, dedicated, host`,
		},
		{
			platform: configv1.AzurePlatformType,
			status: func(ps *configv1.PlatformStatus) {
				ps.Azure = &configv1.AzurePlatformStatus{CloudName: configv1.AzurePublicCloud, ResourceGroupName: testInfraName + "-rg"}
			},
			credentials: "azure-cloud-credentials",
			minimal:     `{"osDisk":{"diskSizeGB":128,"osType":"Linux"}}`,
			want: `{"osDisk":{"diskSizeGB":128,"osType":"Linux"},"vmSize":"` + azureVMSize + `","vnet":"test-x7k2p-vnet","subnet":"test-x7k2p-worker-subnet",` +
				`"image":{"offer":"","publisher":"","resourceID":"` + azureImage + `","sku":"","version":""},` +
				`"userDataSecret":{"name":"worker-user-data"},"credentialsSecret":{"name":"azure-cloud-credentials","namespace":"openshift-machine-api"}}`,
			warnings: []string{"incorrect GroupVersionKind for AzureMachineProviderSpec object: /, Kind="},
			bad:      `{"osDisk":{"diskSizeGB":40000}}`,
			wantErr:  `providerSpec.osDisk.diskSizeGB: Invalid value: 40000: diskSizeGB must be greater than zero and less than 32768`,
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
// defaults, and a bad one is refused naming the field.
func TestPlatformsThroughAPIServer(t *testing.T) {
	warnings := &warningRecorder{}
	c := startAPIServerWithWebhooks(t, warnings)
	ctx := context.Background()
	const ns = "openshift-machine-api"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": "workers"}
	for _, tc := range platformCases() {
		t.Run(string(tc.platform), func(t *testing.T) {
			setPlatform(t, c, tc.platform, tc.status)
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.credentials}}
			if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			ms := machineSet("workers", sel, sel, value(tc.minimal))
			ms.Namespace = ns
			warnings.take()
			if err := c.Create(ctx, ms, client.DryRunAll); err != nil {
				t.Fatalf("creating a minimal MachineSet: %v", err)
			}
			jsonEqual(t, ms.Spec.Template.Spec.ProviderSpec.Value.Raw, tc.want)
			if ms.Labels[ClusterIDLabel] != testInfraName {
				t.Errorf("labels = %v, want the cluster label", ms.Labels)
			}
			if got := warnings.take(); !reflect.DeepEqual(got, tc.warnings) {
				t.Errorf("warnings:\n got  %q\n want %q", got, tc.warnings)
			}

			bad := machineSet("bad", sel, sel, value(tc.bad))
			bad.Namespace = ns
			err := c.Create(ctx, bad, client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), `admission webhook "validation.machineset.machine.openshift.io" denied the request`) ||
				!strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("creating a bad MachineSet: %v, want refused with %q", err, tc.wantErr)
			}
		})
	}
}

// setPlatform makes the Infrastructure "cluster" describe a cluster of
// platform p (status filled in as the installer does).
func setPlatform(t *testing.T, c client.Client, p configv1.PlatformType, status func(*configv1.PlatformStatus)) {
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
}
