// Package kubeserver only anchors this module: it exists so kube-apiserver and
// kube-controller-manager (the go.mod tool lines) are built offline from the Kubernetes Go
// modules for splitbrain's kubernetes image, keeping their dependencies out of the harness
// module.
package kubeserver
