package operator

import (
	"context"
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/names"
	"github.com/machine-api-operator/machine-api-operator/pkg/operator/config"
)

// WebhookCertificates says who issues the webhook serving certificates.
type WebhookCertificates string

const (
	// CertificatesAuto means service-ca while the cluster serves its API, else the
	// operator; decided at every sync, so a late service-ca takes over.
	CertificatesAuto WebhookCertificates = ""
	// CertificatesServiceCA means always service-ca.
	CertificatesServiceCA WebhookCertificates = "service-ca"
	// CertificatesOperator means always the operator's own CA.
	CertificatesOperator WebhookCertificates = "operator"
)

// observeConfig reads every input (unserved kinds but the Infrastructure are
// absent) and builds the config; the inputs say which CRDs to install anyway.
func (o *Operator) observeConfig(ctx context.Context, served servedAPIs) (config.Inputs, config.Config, error) {
	in, err := o.observeInputs(ctx, served)
	if err != nil {
		return in, config.Config{}, err
	}
	if !served.serves(&configv1.Infrastructure{}) && in.ImagesErr == nil {
		return in, config.Config{}, &config.InputError{Reason: config.ReasonInfrastructureNotFound,
			Err: errors.New("the infrastructures.config.openshift.io CRD is not installed: install the config.openshift.io CRDs " +
				"(on vanilla Kubernetes: kustomize build . | kubectl apply --server-side -f -), then create the Infrastructure \"cluster\"")}
	}
	cfg, err := config.Build(in)
	return in, cfg, err
}

func (o *Operator) observeInputs(ctx context.Context, served servedAPIs) (config.Inputs, error) {
	in := config.Inputs{Namespace: o.opts.Namespace, ReleaseVersion: o.opts.ReleaseVersion}
	// Recorded before reading: a change in between brings another sync.
	digest := fileDigest(o.opts.ImagesJSONPath)
	o.imagesDigest.Store(&digest)
	in.Images, in.ImagesErr = config.LoadImages(o.opts.ImagesJSONPath)

	var err error
	if in.Infrastructure, err = getOptional(ctx, o.reader, served, &configv1.Infrastructure{}, config.ClusterConfigName); err != nil {
		return in, err
	}
	if in.Proxy, err = getOptional(ctx, o.reader, served, &configv1.Proxy{}, config.ClusterConfigName); err != nil {
		return in, err
	}
	if in.FeatureGate, err = getOptional(ctx, o.reader, served, &configv1.FeatureGate{}, config.ClusterConfigName); err != nil {
		return in, err
	}
	if in.APIServer, err = getOptional(ctx, o.reader, served, &configv1.APIServer{}, config.ClusterConfigName); err != nil {
		return in, err
	}
	cv, err := getOptional(ctx, o.reader, served, &configv1.ClusterVersion{}, config.ClusterVersionName)
	if err != nil {
		return in, err
	}
	in.OpenShift = cv != nil
	trustedCA := &corev1.ConfigMap{}
	switch err := o.reader.Get(ctx, client.ObjectKey{Namespace: o.opts.Namespace, Name: names.TrustedCAConfigMapName}, trustedCA); {
	case err == nil:
		in.TrustedCA = trustedCA
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("getting configmap %s/%s: %w", o.opts.Namespace, names.TrustedCAConfigMapName, err)
	}
	if in.NodeMaintenanceCRD, err = o.apis.crd(ctx, config.NodeMaintenanceCRDName); err != nil {
		return in, err
	}
	switch o.opts.Certificates {
	case CertificatesServiceCA:
		in.Webhook.ServiceCA = true
	case CertificatesAuto:
		in.Webhook.ServiceCA = served[serviceCAGVK.Kind]
	}
	return in, nil
}

// getOptional reads the cluster-scoped object name of an optional kind: nil
// when it does not exist or its kind is not served.
func getOptional[T client.Object](ctx context.Context, r client.Reader, served servedAPIs, obj T, name string) (T, error) {
	var none T
	if !served.serves(obj) {
		return none, nil
	}
	switch err := r.Get(ctx, client.ObjectKey{Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return none, nil
	case err != nil:
		return none, fmt.Errorf("getting %T %s: %w", obj, name, err)
	}
	return obj, nil
}
