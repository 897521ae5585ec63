package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"maps"

	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// servingCertAnnotation asks service-ca for a serving certificate in the named secret.
const servingCertAnnotation = "service.beta.openshift.io/serving-cert-secret-name"

// webhookService fronts a webhook port of the operand Deployment on 443.
func webhookService(cfg config.Config, name, certSecret, targetPort string) *corev1.Service {
	return service(cfg, name, nil, certSecret, servicePort("https", webhookServicePort, targetPort))
}

// metricsService fronts the operand's metrics ports for the ServiceMonitor,
// which selects it by the pods' labels.
func metricsService(cfg config.Config) *corev1.Service {
	// In container order.
	ports := []corev1.ServicePort{servicePort(machineSetMetricsName, machineSetMetricsPort, machineSetMetricsName)}
	if p := machineMetricsServicePort(cfg); p != 0 {
		ports = append(ports, servicePort(machineMetricsName, p, machineMetricsName))
	}
	ports = append(ports, servicePort(nodeLinkMetricsName, nodeLinkMetricsPort, nodeLinkMetricsName))
	if cfg.MachineHealthCheckEnabled {
		ports = append(ports, servicePort(mhcMetricsName, mhcMetricsPort, mhcMetricsName))
	}
	return service(cfg, ControllersServiceName, controllerLabels, ControllersMetricsCertSecretName, ports...)
}

// service selects the operand's pods; on service-ca, certSecret gets its serving certificate.
func service(cfg config.Config, name string, labels map[string]string, certSecret string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: objectMeta(cfg.Namespace, name, labels),
		Spec:       corev1.ServiceSpec{Selector: maps.Clone(controllerLabels), Ports: ports},
	}
	if cfg.Webhook.ServiceCA {
		svc.Annotations = map[string]string{servingCertAnnotation: certSecret}
	}
	return svc
}

func servicePort(name string, port int32, target string) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromString(target), Protocol: corev1.ProtocolTCP}
}
