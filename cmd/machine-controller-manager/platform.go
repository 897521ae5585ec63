package main

import (
	"context"
	"fmt"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machine-api-operator/machine-api-operator/pkg/operand"
	"github.com/machine-api-operator/machine-api-operator/pkg/scheme"
	"github.com/machine-api-operator/machine-api-operator/pkg/version"
)

// How long the binary tries to read the Infrastructure before giving up (and restarting):
// the platform picks the Lease, so a transient error must not be taken for "no platform".
const (
	platformReadInterval = 2 * time.Second
	platformReadTimeout  = 2 * time.Minute
)

// clusterPlatform reads the Infrastructure's platform type; "" when the cluster has none
// (vanilla Kubernetes: no Infrastructure, or no such API). Other errors are retried every
// interval until timeout, then returned.
func clusterPlatform(opts operand.Options, interval, timeout time.Duration) (configv1.PlatformType, error) {
	cfg, err := opts.RESTConfig("machine-controller-manager/" + version.String())
	if err != nil {
		return "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return "", fmt.Errorf("creating a client: %w", err)
	}
	get := func(ctx context.Context, infra *configv1.Infrastructure) error {
		return c.Get(ctx, client.ObjectKey{Name: "cluster"}, infra)
	}
	return readPlatform(context.Background(), get, interval, timeout)
}

// readPlatform polls get until platformOf decides, or timeout passes.
func readPlatform(ctx context.Context, get func(context.Context, *configv1.Infrastructure) error,
	interval, timeout time.Duration) (configv1.PlatformType, error) {
	var platform configv1.PlatformType
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		infra := &configv1.Infrastructure{}
		p, decided, err := platformOf(infra, get(ctx, infra))
		if !decided {
			last = err
			klog.InfoS("reading the Infrastructure to choose the leader-election Lease; retrying", "err", err)
			return false, nil
		}
		platform = p
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("reading the Infrastructure \"cluster\" for %s (it picks the Lease; check the API server and this ServiceAccount's get on infrastructures.config.openshift.io): %w", timeout, last)
	}
	return platform, nil
}

// platformOf decides the platform from one read of the Infrastructure: decided is false when
// the read failed in a way that says nothing about the platform (retry).
func platformOf(infra *configv1.Infrastructure, err error) (platform configv1.PlatformType, decided bool, _ error) {
	switch {
	case err == nil && infra.Status.PlatformStatus == nil:
		return "", true, nil
	case err == nil:
		return infra.Status.PlatformStatus.Type, true, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return "", true, nil // vanilla Kubernetes: no Infrastructure, or no config.openshift.io API
	default:
		return "", false, err
	}
}
