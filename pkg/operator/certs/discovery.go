package certs

// The OpenShift service-ca operator's API; while the cluster serves it, the
// service-ca operator issues the webhook serving certificates and injects the
// CA bundle (the operator checks at every sync, see package operator).
const (
	ServiceCAGroupVersion = "operator.openshift.io/v1"
	ServiceCAResource     = "servicecas"
)
