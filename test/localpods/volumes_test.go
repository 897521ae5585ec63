package localpods

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// tree reads dir: relative path → content and permissions.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		got[rel] = fmt.Sprintf("%s %o", data, st.Mode().Perm())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

type fileID struct {
	ino   uint64
	mtime time.Time
}

func identify(t *testing.T, path string) fileID {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileID{ino: st.Sys().(*syscall.Stat_t).Ino, mtime: st.ModTime()}
}

func TestSyncDir(t *testing.T) {
	dir := t.TempDir()
	v1 := map[string]file{
		"tls.crt":       {data: []byte("cert-1"), mode: 0o644},
		"tls.key":       {data: []byte("key-1"), mode: 0o600},
		"sub/dir/value": {data: []byte("nested"), mode: 0o644},
		"unchanged":     {data: []byte("same"), mode: 0o644},
	}
	if err := syncDir(dir, v1); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"tls.crt": "cert-1 644", "tls.key": "key-1 600", "sub/dir/value": "nested 644", "unchanged": "same 644",
	}
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the first sync: %v, want %v", got, want)
	}
	// Date the files an hour back, so that a rewrite shows in the mtime
	// whatever the filesystem's timestamp granularity.
	past := time.Now().Add(-time.Hour)
	before := map[string]fileID{}
	for rel := range want {
		if err := os.Chtimes(filepath.Join(dir, rel), past, past); err != nil {
			t.Fatal(err)
		}
		before[rel] = identify(t, filepath.Join(dir, rel))
	}
	// A file the runner did not write (a key that disappeared, or a
	// leftover) goes too.
	if err := os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v2 := map[string]file{
		"tls.crt":       {data: []byte("cert-2"), mode: 0o644},  // content changed
		"tls.key":       {data: []byte("key-1"), mode: 0o640},   // mode changed
		"unchanged":     {data: []byte("same"), mode: 0o644},    // untouched
		"sub/dir/value": {data: []byte("nested"), mode: 0o644},  // untouched
		"new":           {data: []byte("new key"), mode: 0o444}, // added
	}
	if err := syncDir(dir, v2); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		"tls.crt": "cert-2 644", "tls.key": "key-1 640", "unchanged": "same 644", "sub/dir/value": "nested 644", "new": "new key 444",
	}
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the second sync: %v, want %v", got, want)
	}
	for _, rel := range []string{"unchanged", "sub/dir/value"} {
		if got := identify(t, filepath.Join(dir, rel)); got != before[rel] {
			t.Errorf("%s was rewritten although it did not change: %+v, was %+v", rel, got, before[rel])
		}
	}
	// A changed file is replaced (renamed over), not rewritten in place: a
	// reader that has it open keeps the old content, and never sees a
	// half-written file.
	if got := identify(t, filepath.Join(dir, "tls.crt")); got.ino == before["tls.crt"].ino {
		t.Errorf("tls.crt was rewritten in place (same inode), want it replaced atomically")
	}

	// Keys that disappear are removed.
	if err := syncDir(dir, map[string]file{"new": v2["new"]}); err != nil {
		t.Fatal(err)
	}
	if got, want := tree(t, dir), map[string]string{"new": "new key 444"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after removing keys: %v, want %v", got, want)
	}

	// nil (an emptyDir) leaves the directory alone; an empty map empties it.
	if err := syncDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Fatalf("syncDir(nil) changed the directory: %v", got)
	}
	if err := syncDir(dir, map[string]file{}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); len(got) != 0 {
		t.Fatalf("syncDir(empty) left %v", got)
	}
}

// TestSyncDirIsAtomic reads a file while it is being replaced: every read
// sees one whole version.
func TestSyncDirIsAtomic(t *testing.T) {
	dir := t.TempDir()
	a, b := bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 256<<10)
	if err := syncDir(dir, map[string]file{"f": {data: a, mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var reads int
	var bad error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(filepath.Join(dir, "f"))
			reads++
			if err != nil || !(bytes.Equal(data, a) || bytes.Equal(data, b)) {
				bad = fmt.Errorf("read %d bytes (%v), want one whole version", len(data), err)
				return
			}
		}
	})
	for i := range 200 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := syncDir(dir, map[string]file{"f": {data: data, mode: 0o644}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
	t.Logf("%d reads", reads)
}

func TestAddKeys(t *testing.T) {
	mode := func(m int32) *int32 { return &m }
	data := map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca": []byte("a")}
	for _, tc := range []struct {
		name    string
		items   []corev1.KeyToPath
		def     os.FileMode
		want    map[string]file
		wantErr string
	}{
		{
			name: "all keys with the default mode",
			def:  0o640,
			want: map[string]file{"tls.crt": {[]byte("c"), 0o640}, "tls.key": {[]byte("k"), 0o640}, "ca": {[]byte("a"), 0o640}},
		},
		{
			name: "items: only those keys, at their paths, with their modes",
			def:  0o644,
			items: []corev1.KeyToPath{
				{Key: "tls.crt", Path: "certs/server.crt"},
				{Key: "tls.key", Path: "server.key", Mode: mode(0o400)},
			},
			want: map[string]file{"certs/server.crt": {[]byte("c"), 0o644}, "server.key": {[]byte("k"), 0o400}},
		},
		{
			name:    "an item's key must exist",
			items:   []corev1.KeyToPath{{Key: "absent", Path: "x"}},
			wantErr: `key "absent" not found`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]file{}
			err := addKeys(files, data, tc.items, tc.def)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(files, tc.want) {
				t.Errorf("files = %v, want %v", files, tc.want)
			}
		})
	}
}

// tokenClient is a fake clientset whose TokenRequests return numbered
// tokens valid for an hour from clk's now.
func tokenClient(clk clock.PassiveClock) (*fake.Clientset, *[]string) {
	client := fake.NewClientset()
	var mu sync.Mutex
	var issued []string
	client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		mu.Lock()
		defer mu.Unlock()
		ref := req.Spec.BoundObjectRef
		sa := ""
		if impl, ok := action.(k8stesting.CreateActionImpl); ok {
			sa = impl.Name
		}
		tok := fmt.Sprintf("token-%d-for-%s/%s:%s-%s-%v-%d", len(issued)+1, action.GetNamespace(), sa, ref.Name, ref.UID, req.Spec.Audiences, *req.Spec.ExpirationSeconds)
		issued = append(issued, tok)
		req.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Hour))}
		return true, req, nil
	})
	return client, &issued
}

func TestVolumeFiles(t *testing.T) {
	mode := func(m int32) *int32 { return &m }
	yes := true
	ns := "openshift-machine-api"
	look := listerLookupsOf(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns}, Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns}, Data: map[string]string{"ca.crt": "ca"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: ns}, Data: map[string]string{"images.json": "{}"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
	)
	clk := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client, _ := tokenClient(clk)
	w := &volumeWriter{client: client, look: look, clock: clk, tokens: map[string]issuedToken{}}
	pod := testPod()
	pod.Namespace = ns
	for _, tc := range []struct {
		name    string
		vol     corev1.VolumeSource
		want    map[string]string // path → "content mode"
		wantErr string
	}{
		{name: "emptyDir", vol: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, want: nil},
		{
			name: "secret",
			vol:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: mode(0o440)}},
			want: map[string]string{"tls.crt": "crt 440", "tls.key": "key 440"},
		},
		{
			name: "secret items",
			vol:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "tls.key", Path: "k/key.pem", Mode: mode(0o400)}}}},
			want: map[string]string{"k/key.pem": "key 400"},
		},
		{
			name: "optional secret missing",
			vol:  corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: &yes}},
			want: map[string]string{},
		},
		{
			name:    "secret missing",
			vol:     corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}},
			wantErr: `secret "absent"`,
		},
		{
			name: "configMap with binaryData",
			vol:  corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "images"}}},
			want: map[string]string{"images.json": "{} 644", "bin": "\x00\x01 644"},
		},
		{
			name:    "configMap missing",
			vol:     corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}},
			wantErr: `configmap "absent"`,
		},
		{
			name: "downwardAPI",
			vol: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}, Mode: mode(0o400)},
			}}},
			want: map[string]string{"name": "mao-7d9f 644", "labels": "b=\"with \\\"quotes\\\"\"\nk8s-app=\"controller\" 400"},
		},
		{
			name: "projected kube-api-access",
			vol: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode(0o444), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}, Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls/crt"}}}},
			}}},
			want: map[string]string{
				"token":     "token-1-for-openshift-machine-api/machine-api-controllers:mao-7d9f-0b1c-[]-3607 444",
				"ca.crt":    "ca 444",
				"namespace": "openshift-machine-api 444",
				"tls/crt":   "crt 444",
			},
		},
		{
			name:    "hostPath is not supported",
			vol:     corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
			wantErr: "only emptyDir, secret, configMap, downwardAPI and projected volumes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := w.files(context.Background(), pod, corev1.Volume{Name: "v", VolumeSource: tc.vol})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if files != nil {
					t.Fatalf("files = %v, want nil", files)
				}
				return
			}
			got := map[string]string{}
			for k, f := range files {
				got[k] = fmt.Sprintf("%s %o", f.data, f.mode)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("files = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVolumeTokens(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client, issued := tokenClient(clk)
	w := &volumeWriter{client: client, look: listerLookupsOf(t), clock: clk, tokens: map[string]issuedToken{}}
	pod := testPod()
	proj := &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}
	get := func() string {
		t.Helper()
		tok, err := w.token(context.Background(), pod, "kube-api-access", proj)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := get()
	if !strings.HasPrefix(first, "token-1-for-openshift-machine-api/machine-api-controllers:mao-7d9f-0b1c-[api]-3600") {
		t.Fatalf("token = %q, want one bound to the pod with audience api and the default 3600 s", first)
	}
	if got := client.Actions()[0].GetResource().Resource + "/" + client.Actions()[0].GetSubresource(); got != "serviceaccounts/token" {
		t.Fatalf("request %s, want serviceaccounts/token", got)
	}
	clk.SetTime(clk.Now().Add(47 * time.Minute)) // < 80% of an hour: cached
	if got := get(); got != first || len(*issued) != 1 {
		t.Fatalf("at 47 min: token %q (%d issued), want the cached one", got, len(*issued))
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute)) // > 80%: renewed
	if got := get(); got == first || len(*issued) != 2 {
		t.Fatalf("at 49 min: token %q (%d issued), want a new one", got, len(*issued))
	}
	// Another pod's cache entry survives forget.
	other := testPod()
	other.UID = types.UID("0b1c2")
	if _, err := w.token(context.Background(), other, "kube-api-access", proj); err != nil {
		t.Fatal(err)
	}
	w.forget(string(pod.UID))
	var keys []string
	for k := range w.tokens {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"0b1c2/kube-api-access/token"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("tokens after forget = %v, want %v", keys, want)
	}
	// The ServiceAccount defaults to "default".
	pod.Spec.ServiceAccountName = ""
	w.forget(string(pod.UID))
	if got := get(); !strings.HasPrefix(got, "token-4-for-openshift-machine-api/default:mao-7d9f-") {
		t.Fatalf("token = %q, want one of the default ServiceAccount", got)
	}
}

// TestVolumeWriterConcurrent writes the volumes of several pods at once, as
// the Runner's workers do (run with -race).
func TestVolumeWriterConcurrent(t *testing.T) {
	client, _ := tokenClient(clocktesting.NewFakePassiveClock(time.Now()))
	w := &volumeWriter{client: client, look: listerLookupsOf(t), clock: clock.RealClock{}, tokens: map[string]issuedToken{}}
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			pod := testPod()
			pod.UID = types.UID(fmt.Sprint("uid-", i))
			pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}}}
			for range 20 {
				if _, err := w.write(context.Background(), pod, filepath.Join(dir, string(pod.UID))); err != nil {
					t.Error(err)
					return
				}
			}
			w.forget(string(pod.UID))
		})
	}
	wg.Wait()
}
