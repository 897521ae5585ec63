package localpods

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// baseEnv is what a container runtime sets before the container's own env.
func baseEnv(pod *corev1.Pod) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{Name: "HOSTNAME", Value: pod.Name},
		{Name: "HOME", Value: "/"},
	}
}

// serviceEnv returns the variables a kubelet injects for Services: the
// kubernetes Service always, and with enableServiceLinks (the default) every
// Service of the pod's namespace.
func serviceEnv(pod *corev1.Pod, kubernetes *corev1.Service, namespaced []*corev1.Service) []corev1.EnvVar {
	var svcs []*corev1.Service
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		for _, s := range namespaced {
			if s.Namespace == pod.Namespace && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone {
				svcs = append(svcs, s)
			}
		}
	}
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].Name < svcs[j].Name })
	if kubernetes != nil {
		svcs = append(svcs, kubernetes)
	}
	var env []corev1.EnvVar
	for _, s := range svcs {
		if len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		ip := s.Spec.ClusterIP
		first := s.Spec.Ports[0]
		env = append(env,
			corev1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: ip},
			corev1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(first.Port))},
			corev1.EnvVar{Name: prefix + "_PORT", Value: fmt.Sprintf("%s://%s:%d", strings.ToLower(string(protocol(first.Protocol))), ip, first.Port)},
		)
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				env = append(env, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), Value: strconv.Itoa(int(p.Port))})
			}
			proto := protocol(p.Protocol)
			base := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, proto)
			env = append(env,
				corev1.EnvVar{Name: base, Value: fmt.Sprintf("%s://%s:%d", strings.ToLower(string(proto)), ip, p.Port)},
				corev1.EnvVar{Name: base + "_PROTO", Value: strings.ToLower(string(proto))},
				corev1.EnvVar{Name: base + "_PORT", Value: strconv.Itoa(int(p.Port))},
				corev1.EnvVar{Name: base + "_ADDR", Value: ip},
			)
		}
	}
	return env
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// lookups give the values env and volumes refer to.
type lookups interface {
	configMap(namespace, name string) (*corev1.ConfigMap, error)
	secret(namespace, name string) (*corev1.Secret, error)
}

// containerEnv resolves a container's environment the way a kubelet does:
// base and Service variables, then envFrom, then env, each value with
// $(VAR) references to earlier variables expanded.
func containerEnv(pod *corev1.Pod, c *corev1.Container, svcEnv []corev1.EnvVar, l lookups) ([]string, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, e := range append(baseEnv(pod), svcEnv...) {
		set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := l.configMap(pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom configmap %q: %w", from.ConfigMapRef.Name, err)
			}
			for _, k := range sortedKeys(cm.Data) {
				set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			s, err := l.secret(pod.Namespace, from.SecretRef.Name)
			if err != nil {
				if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom secret %q: %w", from.SecretRef.Name, err)
			}
			for _, k := range sortedKeys(s.Data) {
				set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vars))
			continue
		}
		v, skip, err := valueFrom(pod, e.ValueFrom, l)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out, vars, nil
}

func valueFrom(pod *corev1.Pod, from *corev1.EnvVarSource, l lookups) (value string, skip bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pod, from.FieldRef.FieldPath)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := l.configMap(pod.Namespace, ref.Name)
		if err != nil {
			return "", optional, ignoreIf(optional, fmt.Errorf("configmap %q: %w", ref.Name, err))
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", optional, ignoreIf(optional, fmt.Errorf("configmap %q has no key %q", ref.Name, ref.Key))
		}
		return v, false, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := l.secret(pod.Namespace, ref.Name)
		if err != nil {
			return "", optional, ignoreIf(optional, fmt.Errorf("secret %q: %w", ref.Name, err))
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", optional, ignoreIf(optional, fmt.Errorf("secret %q has no key %q", ref.Name, ref.Key))
		}
		return string(v), false, nil
	default:
		return "", false, fmt.Errorf("only fieldRef, configMapKeyRef and secretKeyRef are supported by the local pod runner")
	}
}

func ignoreIf(optional bool, err error) error {
	if optional {
		return nil
	}
	return err
}

// fieldValue resolves a downward API field path.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return pod.Status.HostIP, nil
	case "status.podIP", "status.podIPs":
		return pod.Status.PodIP, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if path == prefix {
			var lines []string
			for _, k := range sortedKeys(m) {
				lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
			}
			return strings.Join(lines, "\n"), nil
		}
		if strings.HasPrefix(path, prefix+"['") && strings.HasSuffix(path, "']") {
			return m[strings.TrimSuffix(strings.TrimPrefix(path, prefix+"['"), "']")], nil
		}
	}
	return "", fmt.Errorf("field path %q is not supported", path)
}

// expand replaces $(VAR) with VAR's value when VAR is defined; $$ escapes.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
