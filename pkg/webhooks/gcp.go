package webhooks

import (
	"fmt"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// GCP defaults (OpenShift's; the images are the RHCOS 4.14 boot images the
// installer used).
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
	// gcpConfidentialSeries are the machine series that support
	// confidential VMs.
	gcpConfidentialSeries = []string{"n2d", "c2d"}
)

func init() {
	register(ProviderGCP, "GCPMachineProviderSpec", []string{"gcpprovider.openshift.io", machinev1beta1.GroupName}, defaultGCP, validateGCP)
}

// gcpDiskImage is the default boot image for arch (amd64's for others).
func gcpDiskImage(arch string) string {
	if arch == archARM64 {
		return gcpDiskImages[archARM64]
	}
	return gcpDiskImages[archAMD64]
}

// defaultGCP fills the machine type (by arch), the network interface, boot
// disk and network tag the installer set up for the cluster (named after
// the infrastructure name), a GPU count of 1, and the Secrets.
func defaultGCP(spec *machinev1beta1.GCPMachineProviderSpec, env platformEnv) []string {
	var warnings []string
	id := env.cluster.InfrastructureName
	if spec.MachineType == "" {
		var w string
		spec.MachineType, w = defaultInstanceType(ProviderGCP, env.arch, gcpMachineTypes)
		warnings = append(warnings, w)
	}
	if len(spec.NetworkInterfaces) == 0 {
		spec.NetworkInterfaces = []*machinev1beta1.GCPNetworkInterface{{Network: id + "-network", Subnetwork: id + "-worker-subnet"}}
	}
	if len(spec.Disks) == 0 {
		spec.Disks = []*machinev1beta1.GCPDisk{{AutoDelete: true, Boot: true, SizeGB: defaultGCPDiskSizeGB, Type: defaultGCPDiskType, Image: gcpDiskImage(env.arch)}}
	}
	for _, d := range spec.Disks {
		if d == nil {
			continue
		}
		if d.Type == "" {
			d.Type = defaultGCPDiskType
		}
		if d.Image == "" {
			d.Image = gcpDiskImage(env.arch)
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
	var errs field.ErrorList
	var warnings []string
	p := providerSpecPath
	if spec.Region == "" {
		errs = append(errs, field.Required(p.Child("region"), "region is required"))
	}
	if !strings.HasPrefix(spec.Zone, spec.Region) {
		errs = append(errs, field.Invalid(p.Child("zone"), spec.Zone, fmt.Sprintf("zone not in configured region (%s)", spec.Region)))
	}
	if spec.MachineType == "" {
		errs = append(errs, field.Required(p.Child("machineType"), "machineType should be set to one of the supported GCP machine types"))
	}
	migrate, terminate := machinev1beta1.MigrateHostMaintenanceType, machinev1beta1.TerminateHostMaintenanceType
	if m := spec.OnHostMaintenance; m != "" && m != migrate && m != terminate {
		errs = append(errs, field.Invalid(p.Child("onHostMaintenance"), m, fmt.Sprintf("onHostMaintenance must be either %s or %s.", migrate, terminate)))
	}
	errs = append(errs, validateGCPShieldedInstance(spec.ShieldedInstanceConfig, p.Child("shieldedInstanceConfig"))...)
	errs = append(errs, validateGCPConfidentialCompute(spec, p)...)
	always, never := machinev1beta1.RestartPolicyAlways, machinev1beta1.RestartPolicyNever
	if r := spec.RestartPolicy; r != "" && r != always && r != never {
		errs = append(errs, field.Invalid(p.Child("restartPolicy"), r, fmt.Sprintf("restartPolicy must be either %s or %s.", never, always)))
	}
	// A2 machines come with GPUs attached.
	if (len(spec.GPUs) != 0 || strings.HasPrefix(spec.MachineType, "a2-")) && spec.OnHostMaintenance == migrate {
		errs = append(errs, field.Forbidden(p.Child("onHostMaintenance"),
			fmt.Sprintf("When GPUs are specified or using machineType with pre-attached GPUs(A2 machine family), onHostMaintenance must be set to %s.", terminate)))
	}
	errs = append(errs, validateGCPNetworkInterfaces(spec.NetworkInterfaces, p.Child("networkInterfaces"))...)
	errs = append(errs, validateGCPDisks(spec.Disks, p.Child("disks"))...)
	errs = append(errs, validateGCPGPUs(spec.GPUs, spec.MachineType, p.Child("gpus"))...)
	if len(spec.ServiceAccounts) == 0 {
		warnings = append(warnings, "providerSpec.serviceAccounts: no service account provided: nodes may be unable to join the cluster")
	} else {
		errs = append(errs, validateGCPServiceAccounts(spec.ServiceAccounts, p.Child("serviceAccounts"))...)
	}
	secretErrs, secretWarnings := env.validateSecretRefs(spec.UserDataSecret, spec.CredentialsSecret, p)
	errs, warnings = append(errs, secretErrs...), append(warnings, secretWarnings...)
	return errs, warnings
}

func validateGCPShieldedInstance(c machinev1beta1.GCPShieldedInstanceConfig, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	enabled, disabled := "Enabled", "Disabled"
	for _, f := range []struct{ name, value string }{
		{"secureBoot", string(c.SecureBoot)},
		{"integrityMonitoring", string(c.IntegrityMonitoring)},
		{"virtualizedTrustedPlatformModule", string(c.VirtualizedTrustedPlatformModule)},
	} {
		if f.value != "" && f.value != enabled && f.value != disabled {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, fmt.Sprintf("%s must be either %s or %s.", f.name, enabled, disabled)))
		}
	}
	// Integrity monitoring measures through the vTPM.
	if c.VirtualizedTrustedPlatformModule == machinev1beta1.VirtualizedTrustedPlatformModulePolicyDisabled && c.IntegrityMonitoring != machinev1beta1.IntegrityMonitoringPolicyDisabled {
		errs = append(errs, field.Invalid(path.Child("virtualizedTrustedPlatformModule"), c.VirtualizedTrustedPlatformModule,
			fmt.Sprintf("integrityMonitoring requires virtualizedTrustedPlatformModule %s.", enabled)))
	}
	return errs
}

// validateGCPConfidentialCompute accepts Enabled (with Terminate on host
// maintenance and an n2d/c2d machine), Disabled or nothing. The API's
// technology values (AMDEncryptedVirtualization...) are refused as by the
// OpenShift release this follows.
func validateGCPConfidentialCompute(spec *machinev1beta1.GCPMachineProviderSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.ConfidentialCompute {
	case machinev1beta1.ConfidentialComputePolicyEnabled:
		terminate := machinev1beta1.TerminateHostMaintenanceType
		if spec.OnHostMaintenance != terminate {
			errs = append(errs, field.Invalid(p.Child("onHostMaintenance"), spec.OnHostMaintenance,
				fmt.Sprintf("ConfidentialCompute require OnHostMaintenance to be set to %s, the current value is: %s", terminate, spec.OnHostMaintenance)))
		}
		series, _, _ := strings.Cut(spec.MachineType, "-")
		if !slices.Contains(gcpConfidentialSeries, series) {
			errs = append(errs, field.Invalid(p.Child("machineType"), spec.MachineType,
				fmt.Sprintf("ConfidentialCompute require machine type in the following series: %s", strings.Join(gcpConfidentialSeries, ","))))
		}
	case machinev1beta1.ConfidentialComputePolicyDisabled, "":
	default:
		errs = append(errs, field.Invalid(p.Child("confidentialCompute"), spec.ConfidentialCompute,
			fmt.Sprintf("ConfidentialCompute must be either %s or %s.", machinev1beta1.ConfidentialComputePolicyEnabled, machinev1beta1.ConfidentialComputePolicyDisabled)))
	}
	return errs
}

func validateGCPNetworkInterfaces(nics []*machinev1beta1.GCPNetworkInterface, path *field.Path) field.ErrorList {
	if len(nics) == 0 {
		return field.ErrorList{field.Required(path, "at least 1 network interface is required")}
	}
	var errs field.ErrorList
	for i, nic := range nics {
		if nic == nil {
			nic = &machinev1beta1.GCPNetworkInterface{}
		}
		if nic.Network == "" {
			errs = append(errs, field.Required(path.Index(i).Child("network"), "network is required"))
		}
		if nic.Subnetwork == "" {
			errs = append(errs, field.Required(path.Index(i).Child("subnetwork"), "subnetwork is required"))
		}
	}
	return errs
}

func validateGCPDisks(disks []*machinev1beta1.GCPDisk, path *field.Path) field.ErrorList {
	if len(disks) == 0 {
		return field.ErrorList{field.Required(path, "at least 1 disk is required")}
	}
	var errs field.ErrorList
	for i, d := range disks {
		if d == nil {
			d = &machinev1beta1.GCPDisk{}
		}
		p := path.Index(i)
		switch {
		case d.SizeGB == 0:
		case d.SizeGB < 16:
			errs = append(errs, field.Invalid(p.Child("sizeGb"), d.SizeGB, "must be at least 16GB in size"))
		case d.SizeGB > 65536:
			errs = append(errs, field.Invalid(p.Child("sizeGb"), d.SizeGB, "exceeding maximum GCP disk size limit, must be below 65536"))
		}
		if d.Type != "" && !slices.Contains(gcpDiskTypes, d.Type) {
			errs = append(errs, field.NotSupported(p.Child("type"), d.Type, gcpDiskTypes))
		}
	}
	return errs
}

func validateGCPGPUs(gpus []machinev1beta1.GCPGPUConfig, machineType string, path *field.Path) field.ErrorList {
	switch {
	case len(gpus) > 1:
		return field.ErrorList{field.TooMany(path, len(gpus), 1)}
	case len(gpus) == 0:
		return nil
	}
	var errs field.ErrorList
	gpu := gpus[0]
	// OpenShift names this path gpus.Type.
	if gpu.Type == "" {
		errs = append(errs, field.Required(path.Child("Type"), "Type is required"))
	}
	if gpu.Type == "nvidia-tesla-a100" {
		errs = append(errs, field.Invalid(path.Child("Type"), gpu.Type, " nvidia-tesla-a100 gpus, are only attached to the A2 machine types"))
	}
	if strings.HasPrefix(machineType, "a2-") {
		errs = append(errs, field.Invalid(path, gpu.Type, "A2 machine types have already attached gpus, additional gpus cannot be specified"))
	}
	return errs
}

func validateGCPServiceAccounts(accounts []machinev1beta1.GCPServiceAccount, path *field.Path) field.ErrorList {
	if len(accounts) != 1 {
		return field.ErrorList{field.Invalid(path, fmt.Sprintf("%d service accounts supplied", len(accounts)), "exactly 1 service account must be supplied")}
	}
	var errs field.ErrorList
	if accounts[0].Email == "" {
		errs = append(errs, field.Required(path.Index(0).Child("email"), "email is required"))
	}
	if len(accounts[0].Scopes) == 0 {
		errs = append(errs, field.Required(path.Index(0).Child("scopes"), "at least 1 scope is required"))
	}
	return errs
}
