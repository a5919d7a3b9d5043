// Package e2e holds carve-dra's end-to-end tests, and no other code:
// the plugin against a real control plane (etcd, kube-apiserver and
// kube-scheduler, make kube) and on a real node (its kubelet and
// containerd, make kube node), each skipping where what it runs is not
// built. They build on dra's exported API only; dra's unit tests are
// beside its code.
package e2e
