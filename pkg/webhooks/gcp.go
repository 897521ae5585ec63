package webhooks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GCP defaults (OpenShift's; the RHCOS 4.14 boot images the installer used).
const (
	defaultGCPCredentialsSecret = "gcp-cloud-credentials"
	defaultGCPDiskSizeGB        = 128
	defaultGCPDiskType          = "pd-standard"
)

var (
	// gcpMachineTypes are the default machine types by control plane arch.
	gcpMachineTypes = map[string]string{archAMD64: "n1-standard-4", archARM64: "t2a-standard-4"}
	// gcpDiskImages are the default boot images by control plane arch.
	gcpDiskImages = map[string]string{
		archAMD64: "projects/rhcos-cloud/global/images/rhcos-414-92-202307070025-0-gcp-x86-64",
		archARM64: "projects/rhcos-cloud/global/images/rhcos-414-92-202307070025-0-gcp-aarch64",
	}
	// gcpDiskTypes are the disk types OpenShift accepts, sorted.
	gcpDiskTypes = []string{"hyperdisk-balanced", "pd-balanced", "pd-ssd", "pd-standard"}
	// gcpConfidentialSeries are the machine series supporting each confidential computing technology.
	gcpConfidentialSeries = map[machinev1beta1.ConfidentialComputePolicy][]string{
		machinev1beta1.ConfidentialComputePolicyEnabled: {"n2d", "c2d", "c3d"},
		machinev1beta1.ConfidentialComputePolicySEV:     {"n2d", "c2d", "c3d"},
		machinev1beta1.ConfidentialComputePolicySEVSNP:  {"n2d"},
		machinev1beta1.ConfidentialComputePolicyTDX:     {"c3"},
	}
)

func init() {
	register(ProviderGCP, "GCPMachineProviderSpec", []string{"gcpprovider.openshift.io", machinev1beta1.GroupName}, defaultGCP, validateGCP)
}

// defaultGCP also fills what the installer set up (named after the infrastructure).
func defaultGCP(spec *machinev1beta1.GCPMachineProviderSpec, env platformEnv) []string {
	warnings := defaultInstanceType(&spec.MachineType, ProviderGCP, env.arch, gcpMachineTypes)
	id := env.cluster.InfrastructureName
	image := cmp.Or(gcpDiskImages[env.arch], gcpDiskImages[archAMD64])
	if len(spec.NetworkInterfaces) == 0 {
		spec.NetworkInterfaces = []*machinev1beta1.GCPNetworkInterface{{Network: id + "-network", Subnetwork: id + "-worker-subnet"}}
	}
	if len(spec.Disks) == 0 {
		spec.Disks = []*machinev1beta1.GCPDisk{{AutoDelete: true, Boot: true, SizeGB: defaultGCPDiskSizeGB, Type: defaultGCPDiskType, Image: image}}
	}
	for _, d := range spec.Disks {
		if d == nil {
			continue
		}
		d.Type = cmp.Or(d.Type, defaultGCPDiskType)
		// As OpenShift: a data disk without an image stays blank.
		if d.Boot {
			d.Image = cmp.Or(d.Image, image)
		}
	}
	// A GPU count of 0 is never meant.
	if len(spec.GPUs) > 0 && spec.GPUs[0].Count == 0 {
		spec.GPUs[0].Count = 1
	}
	if len(spec.Tags) == 0 {
		spec.Tags = []string{id + "-worker"}
	}
	defaultSecretRefs(&spec.UserDataSecret, &spec.CredentialsSecret, defaultGCPCredentialsSecret)
	return warnings
}

func validateGCP(spec *machinev1beta1.GCPMachineProviderSpec, env platformEnv) (field.ErrorList, []string) {
	var v verdict
	p := providerSpecPath
	v.check(spec.Region == "", field.Required(p.Child("region"), "region is required"))
	v.check(!strings.HasPrefix(spec.Zone, spec.Region),
		field.Invalid(p.Child("zone"), spec.Zone, fmt.Sprintf("zone not in configured region (%s)", spec.Region)))
	v.check(spec.MachineType == "",
		field.Required(p.Child("machineType"), "machineType should be set to one of the supported GCP machine types"))
	migrate, terminate := machinev1beta1.MigrateHostMaintenanceType, machinev1beta1.TerminateHostMaintenanceType
	m := spec.OnHostMaintenance
	v.check(m != "" && m != migrate && m != terminate,
		field.Invalid(p.Child("onHostMaintenance"), m, fmt.Sprintf("onHostMaintenance must be either %s or %s.", migrate, terminate)))
	v.add(validateGCPShieldedInstance(spec.ShieldedInstanceConfig, p.Child("shieldedInstanceConfig")), nil)
	v.add(validateGCPConfidentialCompute(spec, p), nil)
	always, never := machinev1beta1.RestartPolicyAlways, machinev1beta1.RestartPolicyNever
	r := spec.RestartPolicy
	v.check(r != "" && r != always && r != never,
		field.Invalid(p.Child("restartPolicy"), r, fmt.Sprintf("restartPolicy must be either %s or %s.", never, always)))
	v.add(validateGCPProvisioningModel(spec, p.Child("provisioningModel")), nil)
	// A2 machines come with GPUs attached.
	v.check((len(spec.GPUs) != 0 || strings.HasPrefix(spec.MachineType, "a2-")) && m == migrate,
		field.Forbidden(p.Child("onHostMaintenance"), fmt.Sprintf("When GPUs are specified or using machineType with pre-attached GPUs(A2 machine family), onHostMaintenance must be set to %s.", terminate)))
	nics := p.Child("networkInterfaces")
	v.check(len(spec.NetworkInterfaces) == 0, field.Required(nics, "at least 1 network interface is required"))
	for i, nic := range spec.NetworkInterfaces {
		if nic == nil {
			nic = &machinev1beta1.GCPNetworkInterface{}
		}
		v.check(nic.Network == "", field.Required(nics.Index(i).Child("network"), "network is required"))
		v.check(nic.Subnetwork == "", field.Required(nics.Index(i).Child("subnetwork"), "subnetwork is required"))
	}
	v.add(validateGCPDisks(spec.Disks, p.Child("disks")), nil)
	v.add(validateGCPGPUs(spec.GPUs, spec.MachineType, p.Child("gpus")), nil)
	accounts := p.Child("serviceAccounts")
	switch sa := spec.ServiceAccounts; {
	case len(sa) == 0:
		v.warn(true, "providerSpec.serviceAccounts: no service account provided: nodes may be unable to join the cluster")
	case len(sa) != 1:
		v.check(true, field.Invalid(accounts, fmt.Sprintf("%d service accounts supplied", len(sa)), "exactly 1 service account must be supplied"))
	default:
		v.check(sa[0].Email == "", field.Required(accounts.Index(0).Child("email"), "email is required"))
		v.check(len(sa[0].Scopes) == 0, field.Required(accounts.Index(0).Child("scopes"), "at least 1 scope is required"))
	}
	v.add(env.validateSecretRef(spec.UserDataSecret, "userDataSecret"))
	v.add(env.validateSecretRef(spec.CredentialsSecret, "credentialsSecret"))
	return v.errs, v.warnings
}

func validateGCPShieldedInstance(c machinev1beta1.GCPShieldedInstanceConfig, path *field.Path) field.ErrorList {
	var v verdict
	enabled, disabled := "Enabled", "Disabled"
	for _, f := range []struct{ name, value string }{
		{"secureBoot", string(c.SecureBoot)},
		{"integrityMonitoring", string(c.IntegrityMonitoring)},
		{"virtualizedTrustedPlatformModule", string(c.VirtualizedTrustedPlatformModule)},
	} {
		v.check(f.value != "" && f.value != enabled && f.value != disabled,
			field.Invalid(path.Child(f.name), f.value, fmt.Sprintf("%s must be either %s or %s.", f.name, enabled, disabled)))
	}
	// Integrity monitoring measures through the vTPM.
	v.check(c.VirtualizedTrustedPlatformModule == machinev1beta1.VirtualizedTrustedPlatformModulePolicyDisabled &&
		c.IntegrityMonitoring != machinev1beta1.IntegrityMonitoringPolicyDisabled, field.Invalid(path.Child("virtualizedTrustedPlatformModule"),
		c.VirtualizedTrustedPlatformModule, fmt.Sprintf("integrityMonitoring requires virtualizedTrustedPlatformModule %s.", enabled)))
	return v.errs
}

// validateGCPProvisioningModel accepts Spot or nothing, and Spot not with preemptible.
func validateGCPProvisioningModel(spec *machinev1beta1.GCPMachineProviderSpec, path *field.Path) field.ErrorList {
	if spec.ProvisioningModel == nil {
		return nil
	}
	var v verdict
	spot := machinev1beta1.GCPSpotInstance
	model := *spec.ProvisioningModel
	v.check(model != spot, field.Invalid(path, model, fmt.Sprintf("provisioningModel must be %q or omit for standard provisioning", spot)))
	v.check(model == spot && spec.Preemptible,
		field.Forbidden(path, fmt.Sprintf("preemptible cannot be used together with %q provisioning model", spot)))
	return v.errs
}

// validateGCPConfidentialCompute: any value but Disabled needs Terminate on host
// maintenance (checked, as OpenShift, before the value itself) and a machine series
// supporting its technology.
func validateGCPConfidentialCompute(spec *machinev1beta1.GCPMachineProviderSpec, p *field.Path) field.ErrorList {
	cc := spec.ConfidentialCompute
	if cc == "" || cc == machinev1beta1.ConfidentialComputePolicyDisabled {
		return nil
	}
	var v verdict
	terminate := machinev1beta1.TerminateHostMaintenanceType
	v.check(spec.OnHostMaintenance != terminate, field.Invalid(p.Child("onHostMaintenance"), spec.OnHostMaintenance,
		fmt.Sprintf("ConfidentialCompute %s requires OnHostMaintenance to be set to %s, the current value is: %s", cc, terminate, spec.OnHostMaintenance)))
	series, known := gcpConfidentialSeries[cc]
	machineSeries, _, _ := strings.Cut(spec.MachineType, "-")
	v.check(known && !slices.Contains(series, machineSeries), field.Invalid(p.Child("machineType"), spec.MachineType,
		fmt.Sprintf("ConfidentialCompute %s requires a machine type in the following series: %s", cc, strings.Join(series, ","))))
	v.check(!known, field.Invalid(p.Child("confidentialCompute"), cc, fmt.Sprintf("ConfidentialCompute must be %s, %s, %s, %s, or %s",
		machinev1beta1.ConfidentialComputePolicyEnabled, machinev1beta1.ConfidentialComputePolicyDisabled, machinev1beta1.ConfidentialComputePolicySEV,
		machinev1beta1.ConfidentialComputePolicySEVSNP, machinev1beta1.ConfidentialComputePolicyTDX)))
	return v.errs
}

func validateGCPDisks(disks []*machinev1beta1.GCPDisk, path *field.Path) field.ErrorList {
	var v verdict
	v.check(len(disks) == 0, field.Required(path, "at least 1 disk is required"))
	for i, d := range disks {
		if d == nil {
			d = &machinev1beta1.GCPDisk{}
		}
		p := path.Index(i)
		v.check(d.SizeGB != 0 && d.SizeGB < 16, field.Invalid(p.Child("sizeGb"), d.SizeGB, "must be at least 16GB in size"))
		v.check(d.SizeGB > 65536,
			field.Invalid(p.Child("sizeGb"), d.SizeGB, "exceeding maximum GCP disk size limit, must be below 65536"))
		v.check(d.Type != "" && !slices.Contains(gcpDiskTypes, d.Type), field.NotSupported(p.Child("type"), d.Type, gcpDiskTypes))
	}
	return v.errs
}

func validateGCPGPUs(gpus []machinev1beta1.GCPGPUConfig, machineType string, path *field.Path) field.ErrorList {
	switch {
	case len(gpus) > 1:
		return field.ErrorList{field.TooMany(path, len(gpus), 1)}
	case len(gpus) == 0:
		return nil
	}
	var v verdict
	gpu := gpus[0]
	// OpenShift names this path gpus.Type.
	v.check(gpu.Type == "", field.Required(path.Child("Type"), "Type is required"))
	v.check(gpu.Type == "nvidia-tesla-a100",
		field.Invalid(path.Child("Type"), gpu.Type, " nvidia-tesla-a100 gpus, are only attached to the A2 machine types"))
	v.check(strings.HasPrefix(machineType, "a2-"),
		field.Invalid(path, gpu.Type, "A2 machine types have already attached gpus, additional gpus cannot be specified"))
	return v.errs
}
