// Package deploy holds what operators need to run a Sextant cluster: a
// FROM-scratch container image, a compose cluster, Kubernetes manifests and
// Prometheus configuration, plus the tests that check them.
package deploy
