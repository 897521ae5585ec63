package localpods

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// volumeWriter materialises a pod's volumes as directories on the host, and
// refreshes them (Secrets and ConfigMaps that change, tokens before they
// expire) when called again.
type volumeWriter struct {
	client kubernetes.Interface
	look   lookups
	clock  clock.PassiveClock
	// mu guards tokens: the Runner's workers write the volumes of
	// different pods concurrently.
	mu sync.Mutex
	// tokens caches issued ServiceAccount tokens by volume/path, with the
	// time to renew them.
	tokens map[string]issuedToken
}

type issuedToken struct {
	token   string
	renewAt time.Time
}

type file struct {
	data []byte
	mode os.FileMode
}

// write materialises every volume of pod under dir/<volume name> and returns
// the host directory of each volume.
func (w *volumeWriter) write(ctx context.Context, pod *corev1.Pod, dir string) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		host := filepath.Join(dir, v.Name)
		files, err := w.files(ctx, pod, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		if err := os.MkdirAll(host, 0o755); err != nil {
			return nil, err
		}
		if err := syncDir(host, files); err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		paths[v.Name] = host
	}
	return paths, nil
}

// files returns the files of a volume; nil for an emptyDir (whose content
// belongs to the containers).
func (w *volumeWriter) files(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (map[string]file, error) {
	switch {
	case v.EmptyDir != nil:
		return nil, nil
	case v.Secret != nil:
		files := map[string]file{}
		s, err := w.look.secret(pod.Namespace, v.Secret.SecretName)
		if err != nil {
			if v.Secret.Optional != nil && *v.Secret.Optional {
				return files, nil
			}
			return nil, fmt.Errorf("secret %q: %w", v.Secret.SecretName, err)
		}
		return files, addKeys(files, s.Data, v.Secret.Items, mode(v.Secret.DefaultMode))
	case v.ConfigMap != nil:
		files := map[string]file{}
		cm, err := w.look.configMap(pod.Namespace, v.ConfigMap.Name)
		if err != nil {
			if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
				return files, nil
			}
			return nil, fmt.Errorf("configmap %q: %w", v.ConfigMap.Name, err)
		}
		return files, addKeys(files, configMapData(cm), v.ConfigMap.Items, mode(v.ConfigMap.DefaultMode))
	case v.DownwardAPI != nil:
		files := map[string]file{}
		for _, item := range v.DownwardAPI.Items {
			if err := addDownward(files, pod, item, mode(v.DownwardAPI.DefaultMode)); err != nil {
				return nil, err
			}
		}
		return files, nil
	case v.Projected != nil:
		return w.projected(ctx, pod, v)
	default:
		return nil, fmt.Errorf("only emptyDir, secret, configMap, downwardAPI and projected volumes are supported by the local pod runner")
	}
}

func (w *volumeWriter) projected(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (map[string]file, error) {
	files := map[string]file{}
	def := mode(v.Projected.DefaultMode)
	for _, src := range v.Projected.Sources {
		switch {
		case src.ServiceAccountToken != nil:
			tok, err := w.token(ctx, pod, v.Name, src.ServiceAccountToken)
			if err != nil {
				return nil, err
			}
			files[src.ServiceAccountToken.Path] = file{data: []byte(tok), mode: def}
		case src.ConfigMap != nil:
			cm, err := w.look.configMap(pod.Namespace, src.ConfigMap.Name)
			if err != nil {
				if src.ConfigMap.Optional != nil && *src.ConfigMap.Optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q: %w", src.ConfigMap.Name, err)
			}
			if err := addKeys(files, configMapData(cm), src.ConfigMap.Items, def); err != nil {
				return nil, err
			}
		case src.Secret != nil:
			s, err := w.look.secret(pod.Namespace, src.Secret.Name)
			if err != nil {
				if src.Secret.Optional != nil && *src.Secret.Optional {
					continue
				}
				return nil, fmt.Errorf("secret %q: %w", src.Secret.Name, err)
			}
			if err := addKeys(files, s.Data, src.Secret.Items, def); err != nil {
				return nil, err
			}
		case src.DownwardAPI != nil:
			for _, item := range src.DownwardAPI.Items {
				if err := addDownward(files, pod, item, def); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("projected source not supported by the local pod runner")
		}
	}
	return files, nil
}

// token returns a ServiceAccount token bound to the pod, issued with the
// TokenRequest API and renewed at 80% of its lifetime, as a kubelet does.
func (w *volumeWriter) token(ctx context.Context, pod *corev1.Pod, volume string, p *corev1.ServiceAccountTokenProjection) (string, error) {
	key := string(pod.UID) + "/" + volume + "/" + p.Path
	w.mu.Lock()
	t, ok := w.tokens[key]
	w.mu.Unlock()
	if ok && w.clock.Now().Before(t.renewAt) {
		return t.token, nil
	}
	expiration := int64(3600)
	if p.ExpirationSeconds != nil {
		expiration = *p.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiration,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	resp, err := w.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of serviceaccount %s: %w", sa, err)
	}
	issued := w.clock.Now()
	lifetime := resp.Status.ExpirationTimestamp.Sub(issued)
	w.mu.Lock()
	w.tokens[key] = issuedToken{token: resp.Status.Token, renewAt: issued.Add(lifetime * 8 / 10)}
	w.mu.Unlock()
	return resp.Status.Token, nil
}

// forget drops the tokens of a pod that is gone.
func (w *volumeWriter) forget(pod string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.tokens {
		if len(k) > len(pod) && k[:len(pod)+1] == pod+"/" {
			delete(w.tokens, k)
		}
	}
}

func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}

func addKeys(files map[string]file, data map[string][]byte, items []corev1.KeyToPath, def os.FileMode) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = file{data: v, mode: def}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %q not found", it.Key)
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		files[it.Path] = file{data: v, mode: m}
	}
	return nil
}

func addDownward(files map[string]file, pod *corev1.Pod, item corev1.DownwardAPIVolumeFile, def os.FileMode) error {
	if item.FieldRef == nil {
		return fmt.Errorf("downward API item %q: only fieldRef is supported by the local pod runner", item.Path)
	}
	v, err := fieldValue(pod, item.FieldRef.FieldPath)
	if err != nil {
		return err
	}
	m := def
	if item.Mode != nil {
		m = os.FileMode(*item.Mode)
	}
	files[item.Path] = file{data: []byte(v), mode: m}
	return nil
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

// syncDir makes dir hold exactly files (nil: leave dir alone). Each changed
// file is replaced atomically (write, then rename), so a reader such as a
// certificate watcher never sees half a file; unchanged files are not
// touched.
func syncDir(dir string, files map[string]file) error {
	if files == nil {
		return nil
	}
	for rel, f := range files {
		path := filepath.Join(dir, rel)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			if st, err := os.Stat(path); err == nil && st.Mode().Perm() == f.mode.Perm() {
				continue
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
		if err := os.WriteFile(tmp, f.data, f.mode.Perm()); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.mode.Perm()); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	// Remove keys that disappeared.
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if _, ok := files[rel]; !ok {
			return os.Remove(path)
		}
		return nil
	})
}
