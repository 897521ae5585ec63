package certs

// ServiceCAResource is the service-ca operator's API resource: while the
// cluster serves it, service-ca issues the webhook certificates.
const ServiceCAResource = "servicecas"
