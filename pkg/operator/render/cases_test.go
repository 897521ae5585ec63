package render

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

const testReleaseVersion = "4.99.0-test"

// testImages is an images.json as the release payload would have it.
var testImages = config.Images{
	MachineAPIOperator:            "quay.io/openshift/origin-machine-api-operator:test",
	KubeRBACProxy:                 "quay.io/openshift/origin-kube-rbac-proxy:test",
	ClusterAPIControllerAWS:       "quay.io/openshift/origin-aws-machine-controllers:test",
	ClusterAPIControllerOpenStack: "quay.io/openshift/origin-openstack-machine-api-provider:test",
	ClusterAPIControllerBareMetal: "quay.io/openshift/origin-baremetal-machine-controllers:test",
	ClusterAPIControllerAzure:     "quay.io/openshift/origin-azure-machine-controllers:test",
	ClusterAPIControllerGCP:       "quay.io/openshift/origin-gcp-machine-controllers:test",
	ClusterAPIControllerVSphere:   "quay.io/openshift/origin-machine-api-operator:test",
	ClusterAPIControllerIBMCloud:  "quay.io/openshift/origin-ibmcloud-machine-controllers:test",
	ClusterAPIControllerPowerVS:   "quay.io/openshift/origin-powervs-machine-controllers:test",
	ClusterAPIControllerNutanix:   "quay.io/openshift/origin-nutanix-machine-controllers:test",
	ClusterAPIControllerKubemark:  "quay.io/machine-api-operator/kubemark-machine-controllers:test",
}

// testCABundle is what the operator's own CA would put in the webhook
// configurations (content is not parsed by the API server).
const testCABundle = "-----BEGIN CERTIFICATE-----\nMIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjAjMSEwHwYDVQQDExhtYWNoaW5l\nLWFwaS1vcGVyYXRvci1jYTAeFw0yNjAxMDEwMDAwMDBaFw0zNjAxMDEwMDAwMDBa\n-----END CERTIFICATE-----\n"

// infrastructure is the Infrastructure "cluster" an installer would create
// for the platform; status is what the config operator reports.
func infrastructure(spec configv1.PlatformSpec, status configv1.PlatformStatus) *configv1.Infrastructure {
	return &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.InfrastructureSpec{
			CloudConfig:  configv1.ConfigMapFileReference{Name: "cloud-provider-config", Key: "config"},
			PlatformSpec: spec,
		},
		Status: configv1.InfrastructureStatus{
			InfrastructureName:     "test-7xk2p",
			PlatformStatus:         &status,
			APIServerURL:           "https://api.test.example.com:6443",
			APIServerInternalURL:   "https://api-int.test.example.com:6443",
			ControlPlaneTopology:   configv1.HighlyAvailableTopologyMode,
			InfrastructureTopology: configv1.HighlyAvailableTopologyMode,
			CPUPartitioning:        configv1.CPUPartitioningNone,
		},
	}
}

var infrastructures = map[string]*configv1.Infrastructure{
	"aws": infrastructure(
		configv1.PlatformSpec{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: "us-east-1"}}),
	"azure": infrastructure(
		configv1.PlatformSpec{Type: configv1.AzurePlatformType, Azure: &configv1.AzurePlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.AzurePlatformType, Azure: &configv1.AzurePlatformStatus{
			ResourceGroupName: "test-7xk2p-rg", NetworkResourceGroupName: "test-7xk2p-rg", CloudName: configv1.AzurePublicCloud}}),
	"gcp": infrastructure(
		configv1.PlatformSpec{Type: configv1.GCPPlatformType, GCP: &configv1.GCPPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.GCPPlatformType, GCP: &configv1.GCPPlatformStatus{ProjectID: "test-project", Region: "us-central1"}}),
	"openstack": infrastructure(
		configv1.PlatformSpec{Type: configv1.OpenStackPlatformType, OpenStack: &configv1.OpenStackPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.OpenStackPlatformType, OpenStack: &configv1.OpenStackPlatformStatus{
			APIServerInternalIPs: []string{"10.0.0.5"}, IngressIPs: []string{"10.0.0.7"}, CloudName: "openstack"}}),
	"baremetal": infrastructure(
		configv1.PlatformSpec{Type: configv1.BareMetalPlatformType, BareMetal: &configv1.BareMetalPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.BareMetalPlatformType, BareMetal: &configv1.BareMetalPlatformStatus{
			APIServerInternalIPs: []string{"192.168.111.5"}, IngressIPs: []string{"192.168.111.4"}}}),
	"vsphere": infrastructure(
		configv1.PlatformSpec{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.VSpherePlatformType, VSphere: &configv1.VSpherePlatformStatus{
			APIServerInternalIPs: []string{"192.168.10.5"}, IngressIPs: []string{"192.168.10.4"}}}),
	"ibmcloud": infrastructure(
		configv1.PlatformSpec{Type: configv1.IBMCloudPlatformType, IBMCloud: &configv1.IBMCloudPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.IBMCloudPlatformType, IBMCloud: &configv1.IBMCloudPlatformStatus{
			Location: "us-east", ResourceGroupName: "test-7xk2p-rg", ProviderType: configv1.IBMCloudProviderTypeVPC}}),
	"powervs": infrastructure(
		configv1.PlatformSpec{Type: configv1.PowerVSPlatformType, PowerVS: &configv1.PowerVSPlatformSpec{}},
		configv1.PlatformStatus{Type: configv1.PowerVSPlatformType, PowerVS: &configv1.PowerVSPlatformStatus{
			Region: "us-south", Zone: "dal12", ResourceGroup: "test-7xk2p-rg"}}),
	"nutanix": infrastructure(
		configv1.PlatformSpec{Type: configv1.NutanixPlatformType, Nutanix: &configv1.NutanixPlatformSpec{
			PrismCentral:  configv1.NutanixPrismEndpoint{Address: "prism.example.com", Port: 9440},
			PrismElements: []configv1.NutanixPrismElementEndpoint{{Name: "pe", Endpoint: configv1.NutanixPrismEndpoint{Address: "pe.example.com", Port: 9440}}},
		}},
		configv1.PlatformStatus{Type: configv1.NutanixPlatformType, Nutanix: &configv1.NutanixPlatformStatus{
			APIServerInternalIPs: []string{"10.0.1.5"}, IngressIPs: []string{"10.0.1.4"}}}),
	"kubemark": infrastructure(
		configv1.PlatformSpec{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformSpec{PlatformName: config.KubemarkPlatformName}},
		configv1.PlatformStatus{Type: configv1.ExternalPlatformType, External: &configv1.ExternalPlatformStatus{}}),
	"none": infrastructure(
		configv1.PlatformSpec{Type: configv1.NonePlatformType},
		configv1.PlatformStatus{Type: configv1.NonePlatformType}),
}

// inputs are the Build inputs of a healthy cluster on the named platform.
func inputs(platform string) config.Inputs {
	infra, ok := infrastructures[platform]
	if !ok {
		panic("no test Infrastructure for " + platform)
	}
	return config.Inputs{
		Namespace:      config.DefaultNamespace,
		ReleaseVersion: testReleaseVersion,
		Images:         testImages,
		Infrastructure: infra.DeepCopy(),
		Proxy:          &configv1.Proxy{ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName}},
	}
}

type renderCase struct {
	name string
	in   config.Inputs
}

// renderCases are the golden-file cases: one per platform plus the variants
// of every input that changes the output.
func renderCases() []renderCase {
	cases := []renderCase{}
	for _, p := range []string{"aws", "azure", "gcp", "openstack", "baremetal", "vsphere", "ibmcloud", "powervs", "nutanix", "kubemark", "none"} {
		cases = append(cases, renderCase{name: p, in: inputs(p)})
	}

	mhc := inputs("aws")
	mhc.FeatureGate = &configv1.FeatureGate{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{{
			Version: testReleaseVersion,
			Enabled: []configv1.FeatureGateAttributes{{Name: config.FeatureGateDisableMachineHealthCheck}},
		}}},
	}
	cases = append(cases, renderCase{name: "mhc-disabled", in: mhc})

	proxy := inputs("aws")
	proxy.Proxy = &configv1.Proxy{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.ProxySpec{
			HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3129", NoProxy: ".example.com",
		},
		Status: configv1.ProxyStatus{
			HTTPProxy: "http://proxy.example.com:3128", HTTPSProxy: "http://proxy.example.com:3129",
			NoProxy: ".cluster.local,.example.com,.svc,10.0.0.0/16,127.0.0.1,localhost",
		},
	}
	cases = append(cases, renderCase{name: "proxy", in: proxy})

	serviceCA := inputs("aws")
	serviceCA.Webhook = config.WebhookTLS{ServiceCA: true}
	serviceCA.OpenShift = true
	cases = append(cases, renderCase{name: "service-ca", in: serviceCA})

	// OpenShift (service-ca) on BareMetal with every OpenShift input: a
	// strict Old TLS profile, the injected trusted CA bundle and feature gates.
	openshift := inputs("baremetal")
	openshift.Webhook = config.WebhookTLS{ServiceCA: true}
	openshift.OpenShift = true
	openshift.APIServer = &configv1.APIServer{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.APIServerSpec{
			TLSAdherence:       configv1.TLSAdherencePolicyStrictAllComponents,
			TLSSecurityProfile: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileOldType},
		},
	}
	openshift.TrustedCA = &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: config.DefaultNamespace, Name: "mao-trusted-ca"},
		Data:       map[string]string{"ca-bundle.crt": testCABundle},
	}
	openshift.FeatureGate = &configv1.FeatureGate{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{{
			Version:  testReleaseVersion,
			Enabled:  []configv1.FeatureGateAttributes{{Name: "MachineAPIMigration"}, {Name: "AWSDedicatedHosts"}},
			Disabled: []configv1.FeatureGateAttributes{{Name: "AzureWorkloadIdentity"}},
		}}},
	}
	cases = append(cases, renderCase{name: "openshift-baremetal", in: openshift})

	// OpenShift on AWS: the termination handler with its SCC, Modern TLS
	// (TLS 1.3 only: no cipher suites to pass).
	openshiftAWS := inputs("aws")
	openshiftAWS.Webhook = config.WebhookTLS{ServiceCA: true}
	openshiftAWS.OpenShift = true
	openshiftAWS.APIServer = &configv1.APIServer{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Spec: configv1.APIServerSpec{
			TLSAdherence:       configv1.TLSAdherencePolicyStrictAllComponents,
			TLSSecurityProfile: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType},
		},
	}
	cases = append(cases, renderCase{name: "openshift-aws-modern-tls", in: openshiftAWS})

	// A fresh OpenShift install before service-ca runs: the cluster version
	// operator owns the Machine API CRDs (none rendered) while the operator
	// issues the webhook certificates itself.
	beforeServiceCA := inputs("aws")
	beforeServiceCA.OpenShift = true
	beforeServiceCA.Webhook = config.WebhookTLS{CABundle: []byte(testCABundle)}
	cases = append(cases, renderCase{name: "openshift-before-service-ca", in: beforeServiceCA})

	// OLM installed the node-maintenance-operator, which owns the
	// NodeMaintenance CRD: no CRD, no NodeMaintenance controller.
	nmo := inputs("aws")
	nmo.NodeMaintenanceCRD = &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{Name: config.NodeMaintenanceCRDName, ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "catalog", Operation: metav1.ManagedFieldsOperationUpdate},
		}},
	}
	cases = append(cases, renderCase{name: "node-maintenance-operator", in: nmo})

	// vSphere with VSphereMultiVCenterDay2 (TechPreviewNoUpgrade): the policies refusing
	// the removal of a failure domain still in use.
	vsphereDay2 := inputs("vsphere")
	vsphereDay2.FeatureGate = &configv1.FeatureGate{
		ObjectMeta: metav1.ObjectMeta{Name: config.ClusterConfigName},
		Status: configv1.FeatureGateStatus{FeatureGates: []configv1.FeatureGateDetails{{
			Version: testReleaseVersion,
			Enabled: []configv1.FeatureGateAttributes{{Name: FeatureGateVSphereMultiVCenterDay2}},
		}}},
	}
	cases = append(cases, renderCase{name: "vsphere-multi-vcenter-day2", in: vsphereDay2})

	selfSigned := inputs("aws")
	selfSigned.Webhook = config.WebhookTLS{CABundle: []byte(testCABundle)}
	cases = append(cases, renderCase{name: "self-signed", in: selfSigned})
	return cases
}

func mustRender(t *testing.T, in config.Inputs) (config.Config, []client.Object) {
	t.Helper()
	cfg, err := config.Build(in)
	if err != nil {
		t.Fatalf("config.Build: %v", err)
	}
	objs, err := Render(cfg)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return cfg, objs
}
