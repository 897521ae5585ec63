package render

import (
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
