package localpods

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// fakeLookups serves ConfigMaps and Secrets from maps, by namespace/name.
type fakeLookups struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (l fakeLookups) configMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := l.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (l fakeLookups) secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := l.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

// listerLookupsOf returns the Runner's lookups over listers holding objs.
func listerLookupsOf(t *testing.T, objs ...runtime.Object) *listerLookups {
	t.Helper()
	cms := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *corev1.ConfigMap:
			err = cms.Add(o)
		case *corev1.Secret:
			err = secrets.Add(o)
		default:
			t.Fatalf("listerLookupsOf: %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &listerLookups{cms: corelisters.NewConfigMapLister(cms), secrets: corelisters.NewSecretLister(secrets)}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b-$(A)", "EMPTY": ""}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)z", "xayaz"},
		{"$(B)", "b-$(A)"}, // values are not expanded again
		{"$(EMPTY)|", "|"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"--x=$(UNDEFINED)-$(A)", "--x=$(UNDEFINED)-a"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$$$", "$$"},
		{"$$$(A)", "$a"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$($(A))", "$($(A))"},
		{"100$", "100$"},
	} {
		if got := expand(tc.in, vars); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "mao-7d9f", Namespace: "openshift-machine-api", UID: types.UID("0b1c"),
			Labels:      map[string]string{"k8s-app": "controller", "b": `with "quotes"`},
			Annotations: map[string]string{"note": "$(POD_NAME)"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "machine-api-controllers"},
		Status: corev1.PodStatus{
			HostIP: "127.0.0.1", PodIP: "127.98.0.7",
			HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, PodIPs: []corev1.PodIP{{IP: "127.98.0.7"}},
		},
	}
}

func TestFieldValue(t *testing.T) {
	pod := testPod()
	for _, tc := range []struct {
		path, want string
		wantErr    bool
	}{
		{path: "metadata.name", want: "mao-7d9f"},
		{path: "metadata.namespace", want: "openshift-machine-api"},
		{path: "metadata.uid", want: "0b1c"},
		{path: "spec.nodeName", want: "node-1"},
		{path: "spec.serviceAccountName", want: "machine-api-controllers"},
		{path: "status.hostIP", want: "127.0.0.1"},
		{path: "status.hostIPs", want: "127.0.0.1"},
		{path: "status.podIP", want: "127.98.0.7"},
		{path: "status.podIPs", want: "127.98.0.7"},
		{path: "metadata.labels", want: "b=\"with \\\"quotes\\\"\"\nk8s-app=\"controller\""},
		{path: "metadata.labels['k8s-app']", want: "controller"},
		{path: "metadata.labels['missing']", want: ""},
		{path: "metadata.annotations", want: `note="$(POD_NAME)"`},
		{path: "metadata.annotations['note']", want: "$(POD_NAME)"},
		{path: "spec.containers", wantErr: true},
		{path: "metadata.labels.k8s-app", wantErr: true},
	} {
		got, err := fieldValue(pod, tc.path)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("fieldValue(%q) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestRepository(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"example.com/ours", "example.com/ours"},
		{"example.com/ours:tag", "example.com/ours"},
		{"example.com/ours@sha256:0123abcd", "example.com/ours"},
		{"example.com/ours:tag@sha256:0123abcd", "example.com/ours"},
		{"localhost:5000/x", "localhost:5000/x"},
		{"localhost:5000/x:tag", "localhost:5000/x"},
		{"localhost:5000/x@sha256:0123abcd", "localhost:5000/x"},
		{"localhost:5000/a/b:v1.2.3", "localhost:5000/a/b"},
		{"busybox", "busybox"},
		{"busybox:1.36", "busybox"},
	} {
		if got := repository(tc.image); got != tc.want {
			t.Errorf("repository(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}

func TestImageIsOurs(t *testing.T) {
	r := New(Options{Images: []string{"example.com/ours", "localhost:5000/mapi:dev"}})
	for image, want := range map[string]bool{
		"example.com/ours:tag":             true,
		"example.com/ours@sha256:0123":     true,
		"example.com/ours":                 true,
		"example.com/ours-not:tag":         false,
		"example.com/other/ours:tag":       false,
		"localhost:5000/mapi:other":        true,
		"localhost:5001/mapi:dev":          false,
		"quay.io/brancz/kube-rbac-proxy:1": false,
	} {
		if got := r.ImageIsOurs(image); got != want {
			t.Errorf("ImageIsOurs(%q) = %v, want %v", image, got, want)
		}
	}
}

func TestImageIsOursFromConfigMap(t *testing.T) {
	r := New(Options{Namespace: "ns", ImagesConfigMap: "images"})
	r.look = listerLookupsOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: "ns"}, Data: map[string]string{
		"images.json": `{"machineAPIOperator": "registry.local/mao:v1", "clusterAPIControllerKubemark": "registry.local/kubemark@sha256:00", "kubeRBACProxy": "quay.io/krp:v1"}`,
	}})
	r.opts.Images = nil
	for image, want := range map[string]bool{
		"registry.local/mao:v2":          true,
		"registry.local/kubemark:latest": true,
		"quay.io/krp:v1":                 false,
	} {
		if got := r.ImageIsOurs(image); got != want {
			t.Errorf("ImageIsOurs(%q) = %v, want %v", image, got, want)
		}
	}
}

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, e := range env {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			t.Fatalf("env entry %q has no =", e)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("env has %s twice: %q", k, env)
		}
		m[k] = v
	}
	return m
}

func TestContainerEnv(t *testing.T) {
	yes, no := true, false
	look := fakeLookups{
		cms: map[string]*corev1.ConfigMap{
			"openshift-machine-api/settings": {Data: map[string]string{"LEVEL": "2", "MODE": "cm", "HOSTNAME": "from-cm"}},
		},
		secrets: map[string]*corev1.Secret{
			"openshift-machine-api/creds": {Data: map[string][]byte{"user": []byte("admin"), "MODE": []byte("secret")}},
		},
	}
	svcEnv := []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: "127.96.0.1"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: "443"},
	}
	cmRef := func(name, key string, optional *bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	secretRef := func(name, key string, optional *bool) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
	}
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	base := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=mao-7d9f",
		"HOME=/",
		"KUBERNETES_SERVICE_HOST=127.96.0.1",
		"KUBERNETES_SERVICE_PORT=443",
	}

	for _, tc := range []struct {
		name      string
		c         corev1.Container
		want      []string // exact, in order
		wantVars  map[string]string
		wantErr   string
		wantUnset []string
	}{
		{
			name: "base and Service variables only",
			c:    corev1.Container{},
			want: base,
		},
		{
			name: "env values, $(VAR) of earlier variables, fieldRef",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)/$(POD_NAME)"},
				{Name: "LATER_REF", Value: "$(DEFINED_LATER)"},
				{Name: "DEFINED_LATER", Value: "x"},
				{Name: "ESCAPED", Value: "$$(POD_NAME)"},
				{Name: "FROM_FIELD_NOT_EXPANDED", ValueFrom: fieldRef("metadata.annotations['note']")},
			}},
			want: append(append([]string{}, base...),
				"POD_NAME=mao-7d9f",
				"POD_IP=127.98.0.7",
				"URL=https://127.96.0.1:443/mao-7d9f",
				"LATER_REF=$(DEFINED_LATER)",
				"DEFINED_LATER=x",
				"ESCAPED=$(POD_NAME)",
				"FROM_FIELD_NOT_EXPANDED=$(POD_NAME)",
			),
		},
		{
			name: "envFrom with prefix, then env overrides; later sources win but keep the first position",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
					{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
				},
				Env: []corev1.EnvVar{
					{Name: "LEVEL", Value: "5"},
					{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
					{Name: "FROM_CM", ValueFrom: cmRef("settings", "MODE", nil)},
					{Name: "FROM_SECRET", ValueFrom: secretRef("creds", "user", nil)},
					{Name: "OPT_CM_MISSING", ValueFrom: cmRef("absent", "x", &yes)},
					{Name: "OPT_CM_KEY_MISSING", ValueFrom: cmRef("settings", "absent", &yes)},
					{Name: "OPT_SECRET_MISSING", ValueFrom: secretRef("absent", "x", &yes)},
					{Name: "OPT_SECRET_KEY_MISSING", ValueFrom: secretRef("creds", "absent", &yes)},
					{Name: "ECHO", Value: "$(S_user)/$(MODE)/$(OPT_CM_MISSING)"},
				},
			},
			want: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"HOSTNAME=from-cm", // envFrom overrides the runtime's HOSTNAME
				"HOME=/",
				"KUBERNETES_SERVICE_HOST=127.96.0.1",
				"KUBERNETES_SERVICE_PORT=6443",
				"LEVEL=5",
				"MODE=secret", // the Secret without prefix comes after the ConfigMap
				"S_MODE=secret",
				"S_user=admin",
				"user=admin",
				"FROM_CM=cm",
				"FROM_SECRET=admin",
				"ECHO=admin/secret/$(OPT_CM_MISSING)",
			},
			wantUnset: []string{"OPT_CM_MISSING", "OPT_CM_KEY_MISSING", "OPT_SECRET_MISSING", "OPT_SECRET_KEY_MISSING"},
		},
		{
			name:    "missing ConfigMap for envFrom",
			c:       corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &no}}}},
			wantErr: `envFrom configmap "absent"`,
		},
		{
			name:    "missing Secret for envFrom",
			c:       corev1.Container{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}}},
			wantErr: `envFrom secret "absent"`,
		},
		{
			name:    "missing ConfigMap key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: cmRef("settings", "absent", &no)}}},
			wantErr: `env X: configmap "settings" has no key "absent"`,
		},
		{
			name:    "missing Secret",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("absent", "user", nil)}}},
			wantErr: `env X: secret "absent"`,
		},
		{
			name:    "missing Secret key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("creds", "absent", nil)}}},
			wantErr: `env X: secret "creds" has no key "absent"`,
		},
		{
			name:    "unsupported field path",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: fieldRef("spec.containers")}}},
			wantErr: `env X: field path "spec.containers" is not supported`,
		},
		{
			name:    "resourceFieldRef is not supported",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}},
			wantErr: "env X: only fieldRef",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, vars, err := containerEnv(testPod(), &tc.c, svcEnv, look)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(env, tc.want) {
				t.Errorf("env =\n  %q\nwant\n  %q", env, tc.want)
			}
			if m := envMap(t, env); !reflect.DeepEqual(m, vars) {
				t.Errorf("vars %v do not match env %v", vars, m)
			}
			for _, k := range tc.wantUnset {
				if _, ok := vars[k]; ok {
					t.Errorf("%s is set, want it unset (optional source missing)", k)
				}
			}
		})
	}
}

func TestServiceEnv(t *testing.T) {
	no := false
	kube := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default"},
		Spec:       corev1.ServiceSpec{ClusterIP: "127.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
	}
	webhook := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-api-operator-webhook", Namespace: "openshift-machine-api"},
		Spec: corev1.ServiceSpec{ClusterIP: "127.96.4.5", Ports: []corev1.ServicePort{
			{Name: "https", Port: 443},
			{Name: "metrics-port", Port: 8443, Protocol: corev1.ProtocolTCP},
			{Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}
	others := []*corev1.Service{
		webhook,
		{ObjectMeta: metav1.ObjectMeta{Name: "headless", Namespace: "openshift-machine-api"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}, Spec: corev1.ServiceSpec{ClusterIP: "127.96.9.9", Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a-first", Namespace: "openshift-machine-api"}, Spec: corev1.ServiceSpec{ClusterIP: "127.96.1.1", Ports: []corev1.ServicePort{{Port: 8080}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-ports", Namespace: "openshift-machine-api"}, Spec: corev1.ServiceSpec{ClusterIP: "127.96.1.2"}},
	}
	kubeEnv := []string{
		"KUBERNETES_SERVICE_HOST=127.96.0.1",
		"KUBERNETES_SERVICE_PORT=443",
		"KUBERNETES_PORT=tcp://127.96.0.1:443",
		"KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT_443_TCP=tcp://127.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO=tcp",
		"KUBERNETES_PORT_443_TCP_PORT=443",
		"KUBERNETES_PORT_443_TCP_ADDR=127.96.0.1",
	}
	webhookEnv := []string{
		"MACHINE_API_OPERATOR_WEBHOOK_SERVICE_HOST=127.96.4.5",
		"MACHINE_API_OPERATOR_WEBHOOK_SERVICE_PORT=443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT=tcp://127.96.4.5:443",
		"MACHINE_API_OPERATOR_WEBHOOK_SERVICE_PORT_HTTPS=443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_443_TCP=tcp://127.96.4.5:443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_443_TCP_PROTO=tcp",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_443_TCP_PORT=443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_443_TCP_ADDR=127.96.4.5",
		"MACHINE_API_OPERATOR_WEBHOOK_SERVICE_PORT_METRICS_PORT=8443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_8443_TCP=tcp://127.96.4.5:8443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_8443_TCP_PROTO=tcp",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_8443_TCP_PORT=8443",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_8443_TCP_ADDR=127.96.4.5",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_53_UDP=udp://127.96.4.5:53",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_53_UDP_PROTO=udp",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_53_UDP_PORT=53",
		"MACHINE_API_OPERATOR_WEBHOOK_PORT_53_UDP_ADDR=127.96.4.5",
	}
	aFirstEnv := []string{
		"A_FIRST_SERVICE_HOST=127.96.1.1",
		"A_FIRST_SERVICE_PORT=8080",
		"A_FIRST_PORT=tcp://127.96.1.1:8080",
		"A_FIRST_PORT_8080_TCP=tcp://127.96.1.1:8080",
		"A_FIRST_PORT_8080_TCP_PROTO=tcp",
		"A_FIRST_PORT_8080_TCP_PORT=8080",
		"A_FIRST_PORT_8080_TCP_ADDR=127.96.1.1",
	}
	cat := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		links *bool
		kube  *corev1.Service
		want  []string
	}{
		{name: "service links by default, sorted by name, kubernetes last", kube: kube, want: cat(aFirstEnv, webhookEnv, kubeEnv)},
		{name: "enableServiceLinks=false: only kubernetes", links: &no, kube: kube, want: kubeEnv},
		{name: "no kubernetes Service", kube: nil, want: cat(aFirstEnv, webhookEnv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.EnableServiceLinks = tc.links
			var got []string
			for _, e := range serviceEnv(pod, tc.kube, others) {
				got = append(got, e.Name+"="+e.Value)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("serviceEnv =\n  %q\nwant\n  %q", got, tc.want)
			}
		})
	}
}
