package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodIdentityEnv: this project's operand containers learn their pod's
// name and UID from the downward API (their leader-election identity, so a
// restarted container takes its Lease back at once), each runs a binary of
// its own (one Lease each: two containers of a pod with one identity on one
// Lease would both lead), and a platform provider image's container gets
// exactly OpenShift's environment, without them.
func TestPodIdentityEnv(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			cfg, objs := mustRender(t, tc.in)
			if !cfg.RendersOperand() {
				return
			}
			commands := map[string]string{}
			for _, c := range operandDeployment(t, objs).Spec.Template.Spec.Containers {
				name, uid := fieldRefOf(c.Env, "POD_NAME"), fieldRefOf(c.Env, "POD_UID")
				ours := c.Image == cfg.Images.MachineAPIOperator || (c.Name == MachineContainer && providerIsOurs(cfg))
				if !ours {
					if name != "" || uid != "" {
						t.Errorf("container %s (image %s) has POD_NAME %q / POD_UID %q; a provider image gets OpenShift's env", c.Name, c.Image, name, uid)
					}
					continue
				}
				if name != "metadata.name" || uid != "metadata.uid" {
					t.Errorf("container %s: POD_NAME from %q, POD_UID from %q; want metadata.name and metadata.uid", c.Name, name, uid)
				}
				cmd := c.Command[0]
				if other, ok := commands[cmd]; ok {
					t.Errorf("containers %s and %s both run %s: they would elect on one Lease with one identity", other, c.Name, cmd)
				}
				commands[cmd] = c.Name
			}
			if commands["/machineset-controller"] == "" || commands["/nodelink-controller"] == "" {
				t.Errorf("this project's binaries %v lack the machineset or nodelink controller", commands)
			}
		})
	}
}

// fieldRefOf is the downward API field of env var name, "" if none.
func fieldRefOf(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}
