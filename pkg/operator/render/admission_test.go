package render

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func TestLifecycleHooksAdmissionPolicyObjects(t *testing.T) {
	policy, binding := LifecycleHooksAdmissionPolicy()
	if policy.Kind != "ValidatingAdmissionPolicy" || policy.APIVersion != "admissionregistration.k8s.io/v1" ||
		binding.Kind != "ValidatingAdmissionPolicyBinding" || binding.APIVersion != "admissionregistration.k8s.io/v1" {
		t.Errorf("TypeMeta not set: %v / %v", policy.TypeMeta, binding.TypeMeta)
	}
	if policy.Name != LifecycleHooksPolicyName || binding.Name != LifecycleHooksPolicyName || binding.Spec.PolicyName != policy.Name {
		t.Errorf("names: policy %q binding %q → %q", policy.Name, binding.Name, binding.Spec.PolicyName)
	}
	out, err := LifecycleHooksAdmissionPolicyYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "status:") || strings.Contains(string(out), "creationTimestamp") {
		t.Errorf("YAML has empty status or creationTimestamp:\n%s", out)
	}
	docs := strings.Split(strings.TrimPrefix(string(out), "---\n"), "---\n")
	if len(docs) != 2 {
		t.Fatalf("want 2 YAML documents, got %d:\n%s", len(docs), out)
	}
	var back admissionregistrationv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Spec.Validations) != 2 || back.Spec.Validations[0].Expression != policy.Spec.Validations[0].Expression {
		t.Errorf("YAML round trip lost validations: %+v", back.Spec.Validations)
	}
}

// LifecycleHooksAdmissionPolicyYAML renders the policy and the binding as a
// two-document YAML stream.
func LifecycleHooksAdmissionPolicyYAML() ([]byte, error) {
	policy, binding := LifecycleHooksAdmissionPolicy()
	var out []byte
	for _, obj := range []client.Object{policy, binding} {
		b, err := ToYAML(obj)
		if err != nil {
			return nil, err
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}

// TestAdmissionPolicies: every policy is failurePolicy Fail, carries the common labels and
// has a Deny binding of its name, and AdmissionPolicyNames lists exactly them.
// Breaks if: a policy is added without its binding or name, or rendered failurePolicy Ignore.
func TestAdmissionPolicies(t *testing.T) {
	objs := AdmissionPolicies()
	var policies, bindings []string
	for _, o := range objs {
		if o.GetLabels()[PartOfLabel] != PartOfValue {
			t.Errorf("%s has labels %v", o.GetName(), o.GetLabels())
		}
		switch x := o.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			if x.Spec.FailurePolicy == nil || *x.Spec.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("%s: failurePolicy %v, want Fail", x.Name, x.Spec.FailurePolicy)
			}
			policies = append(policies, x.Name)
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			if x.Spec.PolicyName != x.Name || len(x.Spec.ValidationActions) != 1 || x.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
				t.Errorf("binding %s: %+v", x.Name, x.Spec)
			}
			bindings = append(bindings, x.Name)
		}
	}
	if !slices.Equal(policies, AdmissionPolicyNames) || !slices.Equal(bindings, AdmissionPolicyNames) {
		t.Errorf("policies %v, bindings %v, want %v each", policies, bindings, AdmissionPolicyNames)
	}
}

// TestVSphereFailureDomainPoliciesGated: the failure domain policies are rendered on vSphere
// with VSphereMultiVCenterDay2 only, as OpenShift's operator applies them, and bind every
// param object of the operand's namespace, allowing the update when there is none.
// Breaks if: the platform or the gate check is dropped, or a binding names one param object.
func TestVSphereFailureDomainPoliciesGated(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"vsphere", nil},
		{"aws", nil},
		{"vsphere-multi-vcenter-day2", VSphereFailureDomainPolicyNames},
	} {
		cfg, objs := mustRender(t, renderCaseNamed(t, tc.name))
		var policies []string
		for _, o := range objs {
			switch x := o.(type) {
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				if strings.HasPrefix(x.Name, "vsphere-") {
					policies = append(policies, x.Name)
				}
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				if !strings.HasPrefix(x.Name, "vsphere-") {
					continue
				}
				p := x.Spec.ParamRef
				if p == nil || p.Namespace != cfg.Namespace || p.Name != "" || p.Selector == nil || len(p.Selector.MatchLabels)+len(p.Selector.MatchExpressions) != 0 ||
					p.ParameterNotFoundAction == nil || *p.ParameterNotFoundAction != admissionregistrationv1.AllowAction {
					t.Errorf("%s: binding %s paramRef %+v, want every object in %s, Allow when none", tc.name, x.Name, p, cfg.Namespace)
				}
			}
		}
		if !slices.Equal(policies, tc.want) {
			t.Errorf("%s: vSphere policies %v, want %v", tc.name, policies, tc.want)
		}
	}
}
