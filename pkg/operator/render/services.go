package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// servingCertAnnotation asks OpenShift's service-ca operator to issue a
// serving certificate for the Service into the named secret.
const servingCertAnnotation = "service.beta.openshift.io/serving-cert-secret-name"

// webhookService fronts a webhook port of the operand Deployment on 443.
func webhookService(cfg config.Config, name, certSecret, targetPort string) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: objectMeta(cfg.Namespace, name, nil),
		Spec: corev1.ServiceSpec{
			Selector: copyLabels(controllerLabels),
			Ports: []corev1.ServicePort{{
				Name:       "https",
				Port:       webhookServicePort,
				TargetPort: intstr.FromString(targetPort),
				Protocol:   corev1.ProtocolTCP,
			}},
		},
	}
	if cfg.Webhook.ServiceCA {
		svc.Annotations = map[string]string{servingCertAnnotation: certSecret}
	}
	return svc
}
