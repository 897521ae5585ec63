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
	var ports []corev1.ServicePort
	for _, p := range metricsPorts(cfg) {
		ports = append(ports, corev1.ServicePort{
			Name: p.name, Port: p.number, TargetPort: intstr.FromString(p.name), Protocol: corev1.ProtocolTCP,
		})
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

type namedPort struct {
	name   string
	number int32
}

// metricsPorts are the operand's metrics ports, in container order.
func metricsPorts(cfg config.Config) []namedPort {
	ports := []namedPort{{machineSetMetricsName, machineSetMetricsPort}}
	if p := machineMetricsServicePort(cfg); p != 0 {
		ports = append(ports, namedPort{machineMetricsName, p})
	}
	ports = append(ports, namedPort{nodeLinkMetricsName, nodeLinkMetricsPort})
	if cfg.MachineHealthCheckEnabled {
		ports = append(ports, namedPort{mhcMetricsName, mhcMetricsPort})
	}
	return ports
}
