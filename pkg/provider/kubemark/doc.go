// Package kubemark is the built-in kubemark provider: a provider.Actuator whose "instance" is a Node in the cluster
// itself, kept Ready by the cluster's kwok controller, with a simulated health schedule. See docs/kubemark.md.
package kubemark
