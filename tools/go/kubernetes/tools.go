//go:build tools

// Package tools pins the Kubernetes control-plane programs this wrapper builds
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) from the
// published k8s.io/kubernetes module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
