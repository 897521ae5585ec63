package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	sigsjson "sigs.k8s.io/json"
)

// Fuzz tests of the operator's inputs. The seed corpora are the f.Add calls
// and testdata/fuzz/<FuzzName>/; plain `go test` runs them, `make fuzz`
// fuzzes each target for FUZZTIME.

// imagesKeys are the JSON keys of Images.
func imagesKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Images]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	return keys
}

var (
	// malformedAt: the document is not JSON; the offset says where.
	malformedAt = regexp.MustCompile(`^malformed JSON at byte offset (\d+): `)
	// malformedKey: a known key has a value of the wrong type.
	malformedKey = regexp.MustCompile(`^malformed JSON: "([^"]*)": `)
	// notObject: the document is JSON but not an object.
	notObject = regexp.MustCompile(`^malformed JSON: the document must be a JSON object, not [a-z]+$`)
)

// checkImagesError enforces the error rule of ParseImages: every error names
// where the document is wrong, as exactly one of
//
//	malformed JSON at byte offset N: ...              (not JSON; 0 <= N <= len(data))
//	malformed JSON: "<key>": ...                      (<key> is an images.json key)
//	malformed JSON: the document must be a JSON object, not <type>
//	"machineAPIOperator" is missing or empty: ...
func checkImagesError(t *testing.T, data []byte, err error) {
	t.Helper()
	msg := err.Error()
	switch {
	case malformedAt.MatchString(msg):
		off, _ := strconv.Atoi(malformedAt.FindStringSubmatch(msg)[1])
		if off > len(data) {
			t.Fatalf("error %q: offset %d is beyond the %d-byte document", msg, off, len(data))
		}
		if json.Valid(data) {
			t.Fatalf("error %q for a valid JSON document %q", msg, data)
		}
	case malformedKey.MatchString(msg):
		if key := malformedKey.FindStringSubmatch(msg)[1]; !imagesKeys()[key] {
			t.Fatalf("error %q names %q, not an images.json key", msg, key)
		}
	case notObject.MatchString(msg):
	case strings.HasPrefix(msg, `"machineAPIOperator" is missing or empty`):
	default:
		t.Fatalf("error %q for %q names neither a key nor a position in the document", msg, data)
	}
}

// FuzzParseImages: ParseImages never panics; an accepted document has a
// machineAPIOperator image, decodes as encoding/json decodes it, and
// round-trips; a refused one gets an error following checkImagesError.
func FuzzParseImages(f *testing.F) {
	f.Add([]byte(`{"machineAPIOperator":"quay.io/mao:1","kubeRBACProxy":"quay.io/rbac:1","clusterAPIControllerKubemark":"quay.io/km:1"}`))
	f.Add([]byte(`{"machineAPIOperator":"mao","unknownKey":{"nested":[1,2,3]}}`))
	f.Add([]byte(`{"machineAPIOperator":""}`))
	f.Add([]byte(`{"machineAPIOperator":1}`))
	f.Add([]byte(`{"machineAPIOperator":"mao","kubeRBACProxy":null}`))
	f.Add([]byte(`{"machineAPIOperator":`))
	f.Add([]byte(`["machineAPIOperator"]`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		images, err := ParseImages(data)
		if err != nil {
			if images != (Images{}) {
				t.Errorf("images %+v returned with error %v", images, err)
			}
			checkImagesError(t, data, err)
			return
		}
		if images.MachineAPIOperator == "" {
			t.Fatalf("accepted %q without a machineAPIOperator image", data)
		}
		var want Images
		if err := json.Unmarshal(data, &want); err != nil || want != images {
			t.Fatalf("ParseImages(%q) = %+v; encoding/json gives %+v, %v", data, images, want, err)
		}
		for key := range imagesKeys() {
			if got := images.byKey(key); got != reflect.ValueOf(images).FieldByNameFunc(func(n string) bool {
				return strings.EqualFold(n, key)
			}).String() {
				t.Fatalf("byKey(%q) = %q", key, got)
			}
		}
		again, err := json.Marshal(images)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := ParseImages(again); err != nil || back != images {
			t.Fatalf("round trip of %+v: %+v, %v", images, back, err)
		}
	})
}

// decodeInput decodes the JSON of an input object as the operator's client
// does (case-sensitive keys, sigs.k8s.io/json). Empty data means the object
// does not exist (nil). ok is false when the document cannot be decoded: the
// API server (or render's YAML reader) refuses it before Build sees it.
func decodeInput[T any](data []byte) (obj *T, ok bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, true
	}
	obj = new(T)
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, false
	}
	return obj, true
}

// FuzzBuild decodes fuzzed images.json, Infrastructure, Proxy and FeatureGate
// documents (empty = absent) and builds the Config. Properties:
//
//   - Build never panics and is deterministic.
//   - An error is an InputError whose message names the wrong input and
//     field: an images.json error is ParseImages' (see checkImagesError) or
//     names the platform's images.json key ("clusterAPIController..."); a
//     missing Infrastructure names infrastructures.config.openshift.io
//     "cluster"; an invalid one names status.platformStatus.type.
//   - A Config is consistent with its inputs: NoOp exactly when there is no
//     provider image (and then with a reason), the provider image is the
//     platform's images.json key, the proxy comes from Proxy status,
//     MachineHealthCheckEnabled follows the feature gate, and Describe
//     names the platform.
func FuzzBuild(f *testing.F) {
	const (
		images   = `{"machineAPIOperator":"mao","clusterAPIControllerAWS":"aws","clusterAPIControllerKubemark":"km","clusterAPIControllerGCP":"gcp"}`
		kubemark = `{"apiVersion":"config.openshift.io/v1","kind":"Infrastructure","metadata":{"name":"cluster"},"spec":{"platformSpec":{"type":"External","external":{"platformName":"kubemark"}}},"status":{"infrastructureName":"test-x7k2p","platformStatus":{"type":"External"}}}`
		aws      = `{"metadata":{"name":"cluster"},"status":{"platformStatus":{"type":"AWS","aws":{"region":"us-east-1"}}}}`
		proxy    = `{"metadata":{"name":"cluster"},"spec":{"httpProxy":"http://spec:3128"},"status":{"httpProxy":"http://proxy:3128","httpsProxy":"http://proxy:3129","noProxy":".svc,localhost"}}`
		fgStatus = `{"metadata":{"name":"cluster"},"status":{"featureGates":[{"version":"4.22.0","enabled":[{"name":"MachineAPIOperatorDisableMachineHealthCheckController"}],"disabled":[{"name":"Other"}]}]}}`
		fgCustom = `{"metadata":{"name":"cluster"},"spec":{"featureSet":"CustomNoUpgrade","customNoUpgrade":{"enabled":["MachineAPIOperatorDisableMachineHealthCheckController"],"disabled":["X"]}}}`
	)
	f.Add([]byte(images), []byte(kubemark), []byte(proxy), []byte(fgStatus), "4.22.0")
	f.Add([]byte(images), []byte(aws), []byte(""), []byte(fgCustom), "")
	f.Add([]byte(images), []byte(`{"status":{"platformStatus":{"type":"GCP"}}}`), []byte(`{}`), []byte(`{}`), "4.21.0")
	f.Add([]byte(images), []byte(`{"status":{"platformStatus":{"type":"Azure"}}}`), []byte(""), []byte(""), "")
	f.Add([]byte(images), []byte(`{"spec":{"platformSpec":{"type":"External","external":{"platformName":"other"}}},"status":{"platformStatus":{"type":"External"}}}`), []byte(""), []byte(""), "")
	f.Add([]byte(images), []byte(`{"status":{"platformStatus":{"type":"None"}}}`), []byte(""), []byte(""), "")
	f.Add([]byte(images), []byte(`{"status":{"platformStatus":{"type":""}}}`), []byte(""), []byte(""), "")
	f.Add([]byte(images), []byte(`{"status":{}}`), []byte(""), []byte(""), "")
	f.Add([]byte(images), []byte(""), []byte(""), []byte(""), "")
	f.Add([]byte(`{"machineAPIOperator":"mao"}`), []byte(aws), []byte(""), []byte(""), "")
	f.Add([]byte(`{"machineAPIOperator":`), []byte(aws), []byte(""), []byte(""), "")
	f.Fuzz(func(t *testing.T, imagesJSON, infraJSON, proxyJSON, fgJSON []byte, release string) {
		infra, ok1 := decodeInput[configv1.Infrastructure](infraJSON)
		proxy, ok2 := decodeInput[configv1.Proxy](proxyJSON)
		fg, ok3 := decodeInput[configv1.FeatureGate](fgJSON)
		if !ok1 || !ok2 || !ok3 {
			return
		}
		in := Inputs{ReleaseVersion: release, Infrastructure: infra, Proxy: proxy, FeatureGate: fg}
		in.Images, in.ImagesErr = ParseImages(imagesJSON)
		cfg, err := Build(in)
		cfg2, err2 := Build(in)
		if (err == nil) != (err2 == nil) || (err == nil && !reflect.DeepEqual(cfg, cfg2)) {
			t.Fatalf("Build is not deterministic: %+v, %v then %+v, %v", cfg, err, cfg2, err2)
		}
		if err != nil {
			checkBuildError(t, in, err)
			return
		}
		checkConfig(t, in, cfg)
	})
}

func checkBuildError(t *testing.T, in Inputs, err error) {
	t.Helper()
	msg := err.Error()
	switch ReasonOf(err) {
	case ReasonInvalidImagesJSON:
		if in.ImagesErr != nil {
			if !strings.Contains(msg, in.ImagesErr.Error()) {
				t.Fatalf("error %q does not carry the images.json error %q", msg, in.ImagesErr)
			}
			return
		}
		key := providerImageKeys[in.Infrastructure.Status.PlatformStatus.Type]
		if key == "" || !strings.Contains(msg, strconv.Quote(key)) {
			t.Fatalf("error %q does not name the images.json key of the platform (%q)", msg, key)
		}
	case ReasonInfrastructureNotFound:
		if in.Infrastructure != nil || !strings.Contains(msg, `infrastructures.config.openshift.io "cluster" not found`) {
			t.Fatalf("error %q: infrastructure %v", msg, in.Infrastructure)
		}
	case ReasonInvalidInfrastructure:
		if !strings.Contains(msg, "status.platformStatus.type") {
			t.Fatalf("error %q does not name status.platformStatus.type", msg)
		}
	default:
		t.Fatalf("error %q is not an InputError with a known reason (reason %q)", msg, ReasonOf(err))
	}
}

func checkConfig(t *testing.T, in Inputs, cfg Config) {
	t.Helper()
	ps := in.Infrastructure.Status.PlatformStatus
	if cfg.PlatformType != ps.Type || cfg.PlatformType == "" {
		t.Fatalf("platform %q, infrastructure says %q", cfg.PlatformType, ps.Type)
	}
	if cfg.Namespace != DefaultNamespace || cfg.ReleaseVersion != in.ReleaseVersion {
		t.Fatalf("namespace %q, release %q", cfg.Namespace, cfg.ReleaseVersion)
	}
	if cfg.NoOp != (cfg.ProviderImage == "") || cfg.NoOp != (cfg.NoOpReason != "") {
		t.Fatalf("NoOp %v, provider image %q, reason %q", cfg.NoOp, cfg.ProviderImage, cfg.NoOpReason)
	}
	if !cfg.NoOp {
		if key := providerImageKeys[cfg.PlatformType]; key == "" || cfg.ProviderImage != in.Images.byKey(key) {
			t.Fatalf("provider image %q for platform %q (key %q)", cfg.ProviderImage, cfg.PlatformType, key)
		}
		if cfg.PlatformType == configv1.ExternalPlatformType && cfg.ExternalPlatformName != KubemarkPlatformName {
			t.Fatalf("External platform %q is not NoOp", cfg.ExternalPlatformName)
		}
	}
	if cfg.TerminationHandlerImage != "" && cfg.TerminationHandlerImage != cfg.ProviderImage {
		t.Fatalf("termination handler image %q, provider image %q", cfg.TerminationHandlerImage, cfg.ProviderImage)
	}
	var wantProxy ProxyEnv
	if in.Proxy != nil {
		wantProxy = ProxyEnv{HTTPProxy: in.Proxy.Status.HTTPProxy, HTTPSProxy: in.Proxy.Status.HTTPSProxy, NoProxy: in.Proxy.Status.NoProxy}
	}
	if cfg.Proxy != wantProxy {
		t.Fatalf("proxy %+v, want %+v", cfg.Proxy, wantProxy)
	}
	if cfg.FeatureGates == nil || cfg.MachineHealthCheckEnabled == cfg.FeatureGates[FeatureGateDisableMachineHealthCheck] {
		t.Fatalf("MHC enabled %v with gates %v", cfg.MachineHealthCheckEnabled, cfg.FeatureGates)
	}
	if d := cfg.Describe(); !strings.HasPrefix(d, "platform "+string(cfg.PlatformType)) {
		t.Fatalf("Describe() = %q", d)
	}
}

// TestParseImagesErrorsSayWhere: found by FuzzParseImages, malformed
// images.json errors did not say where the document is wrong ("malformed
// JSON: unexpected end of JSON input", "json: cannot unmarshal array into Go
// value of type config.Images").
func TestParseImagesErrorsSayWhere(t *testing.T) {
	for data, want := range map[string]string{
		``:                             `malformed JSON at byte offset 0: unexpected end of JSON input`,
		`{"machineAPIOperator":`:       `malformed JSON at byte offset 22: unexpected end of JSON input`,
		`{"machineAPIOperator":"m"} x`: `malformed JSON at byte offset 28: invalid character 'x' after top-level value`,
		`{"machineAPIOperator":1}`:     `malformed JSON: "machineAPIOperator": must be a string, not number`,
		`{"machineAPIOperator":"m","kubeRBACProxy":{}}`: `malformed JSON: "kubeRBACProxy": must be a string, not object`,
		`["machineAPIOperator"]`:                        `malformed JSON: the document must be a JSON object, not array`,
		`{"kubeRBACProxy":"k"}`:                         `"machineAPIOperator" is missing or empty: set it to the pull spec of the machine-api-operator image`,
	} {
		if _, err := ParseImages([]byte(data)); err == nil || err.Error() != want {
			t.Errorf("ParseImages(%q) error %v, want %q", data, err, want)
		}
	}
}
