package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// servingCertAnnotation asks service-ca for a serving certificate in the named secret.
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

// metricsService fronts the operand's metrics ports for the ServiceMonitor,
// which selects it by the pods' labels.
func metricsService(cfg config.Config) *corev1.Service {
	port := func(name string, number int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: number, TargetPort: intstr.FromString(name), Protocol: corev1.ProtocolTCP}
	}
	// In container order.
	ports := []corev1.ServicePort{port(machineSetMetricsName, machineSetMetricsPort)}
	if p := machineMetricsServicePort(cfg); p != 0 {
		ports = append(ports, port(machineMetricsName, p))
	}
	ports = append(ports, port(nodeLinkMetricsName, nodeLinkMetricsPort))
	if cfg.MachineHealthCheckEnabled {
		ports = append(ports, port(mhcMetricsName, mhcMetricsPort))
	}
	svc := &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: objectMeta(cfg.Namespace, ControllersServiceName, controllerLabels),
		Spec: corev1.ServiceSpec{
			Selector: copyLabels(controllerLabels),
			Ports:    ports,
		},
	}
	if cfg.Webhook.ServiceCA {
		svc.Annotations = map[string]string{servingCertAnnotation: ControllersMetricsCertSecretName}
	}
	return svc
}
