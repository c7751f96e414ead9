//go:build !core

package stores

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

// Node names of the kubernetes store; the candidates talk to the API server only.
const (
	kubeEtcdNode       = "etcd"
	kubeAPIServerNode  = "kube-apiserver"
	kubeControllerNode = "kube-controller-manager"
	kubeAPIPort        = "6443"
	kubePKIDir         = "/etc/kubernetes/pki"
	// KubeNamespace is where the recipes keep their objects (and the ready round trip its Lease).
	KubeNamespace = storekinds.KubeNamespace
	// kubeCandidateRole is the ClusterRole (and binding) granting the candidates' group
	// what the recipes use.
	kubeCandidateRole = "splitbrain-candidate"
)

type kubeCluster struct {
	base
	pki       *kubePKI
	adminCert []byte
	adminKey  []byte
}

// kubeAPIServerCommand is the API server's command line: etcd on the run network as storage,
// certificates from kubePKIDir, RBAC, and nothing a control plane without nodes needs
// (no kubelet, no endpoint reconciling, no priority-and-fairness queues).
func kubeAPIServerCommand() []string {
	return []string{
		"/usr/local/bin/kube-apiserver",
		"--etcd-servers", "http://" + kubeEtcdNode + ":" + etcdClientPort,
		"--bind-address", "0.0.0.0",
		"--secure-port", kubeAPIPort,
		"--tls-cert-file", kubePKIDir + "/apiserver.crt",
		"--tls-private-key-file", kubePKIDir + "/apiserver.key",
		"--client-ca-file", kubePKIDir + "/ca.crt",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", kubePKIDir + "/sa.pub",
		"--service-account-signing-key-file", kubePKIDir + "/sa.key",
		"--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
}

// kubeControllerManagerCommand runs only the controllers the recipes depend on: the garbage
// collector (owner references: leader-for-life's lock goes with its Pod) and the service
// account controller (a namespace's default ServiceAccount, which Pod admission needs).
func kubeControllerManagerCommand() []string {
	return []string{
		"/usr/local/bin/kube-controller-manager",
		"--kubeconfig", kubePKIDir + "/controller-manager.kubeconfig",
		"--controllers", "garbagecollector,serviceaccount",
		"--leader-elect=false",
		"--secure-port", "0",
	}
}

func launchKubernetes(ctx context.Context, env *launchEnv) (Cluster, error) {
	pki, err := newKubePKI()
	if err != nil {
		return nil, fmt.Errorf("kubernetes certificates: %w", err)
	}
	srvCert, srvKey, err := pki.issue(kubeAPIServerNode, nil,
		[]string{kubeAPIServerNode, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")})
	if err != nil {
		return nil, err
	}
	saPriv, saPub, err := serviceAccountKey()
	if err != nil {
		return nil, err
	}
	// system:masters: the controllers run on this one identity (no per-controller service
	// accounts), and the garbage collector must be able to delete any kind of object.
	kcmCert, kcmKey, err := pki.issue("system:kube-controller-manager", []string{"system:masters"}, nil, nil)
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := pki.issue("splitbrain-harness", []string{"system:masters"}, nil, nil)
	if err != nil {
		return nil, err
	}
	file := func(name string, data []byte) platform.File {
		return platform.File{Path: kubePKIDir + "/" + name, Content: data, Mode: 0o644}
	}
	apiFiles := []platform.File{file("ca.crt", pki.caPEM), file("apiserver.crt", srvCert), file("apiserver.key", srvKey),
		file("sa.pub", saPub), file("sa.key", saPriv)}
	kcmFiles := []platform.File{file("controller-manager.kubeconfig",
		kubeconfigYAML(kubeAPIServerNode+":"+kubeAPIPort, kubeAPIServerNode, pki.caPEM, kcmCert, kcmKey, "system:kube-controller-manager"))}

	etcdImage := env.images[storekinds.Etcd]
	specs := []platform.NodeSpec{
		{Name: kubeEtcdNode, Role: string(storekinds.Kubernetes), Image: etcdImage,
			Cmd:          EtcdCommand(env.runID, kubeEtcdNode, []string{kubeEtcdNode}),
			ExposedPorts: []string{etcdClientPort + "/tcp"}, LogDir: env.opts.LogDir},
		// The API server retries etcd until it answers, so both start at once.
		// Published: the host's clients verify the serving certificate, which names localhost
		// and not the node's address on the run network.
		{Name: kubeAPIServerNode, Role: string(storekinds.Kubernetes), Image: env.image, Cmd: kubeAPIServerCommand(),
			ExposedPorts: []string{kubeAPIPort + "/tcp"}, PublishPorts: true, Files: apiFiles, LogDir: env.opts.LogDir},
	}
	start := time.Now()
	nodes, err := startNodes(ctx, env, specs)
	if err != nil {
		return nil, err
	}
	c := &kubeCluster{base: base{kind: storekinds.Kubernetes, nodes: nodes, port: kubeAPIPort}, pki: pki, adminCert: adminCert, adminKey: adminKey}
	// The API server first, then RBAC for the candidates, then the controller manager (it
	// gives up if the API server does not answer soon after its start).
	rctx, cancel := context.WithTimeout(ctx, env.opts.ReadyTimeout)
	err = retry(rctx, func(ctx context.Context) error {
		if err := c.leaseRoundTrip(ctx); err != nil {
			return err
		}
		return c.ensureRBAC(ctx)
	})
	cancel()
	if err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("kubernetes API server not ready within %v: %w (node logs: %s)", env.opts.ReadyTimeout, err, logHint(env.opts.LogDir))
	}
	kcm, err := startNodes(ctx, env, []platform.NodeSpec{{Name: kubeControllerNode, Role: string(storekinds.Kubernetes), Image: env.image,
		Cmd: kubeControllerManagerCommand(), Files: kcmFiles, LogDir: env.opts.LogDir}})
	if err != nil {
		c.Close(ctx)
		return nil, err
	}
	c.nodes = append(c.nodes, kcm...)
	c.startDur = time.Since(start)
	rctx, cancel = context.WithTimeout(ctx, env.opts.ReadyTimeout)
	defer cancel()
	if err := c.WaitReady(rctx); err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("kubernetes cluster not ready within %v: %w (node logs: %s)", env.opts.ReadyTimeout, err, logHint(env.opts.LogDir))
	}
	c.readyDur = time.Since(start)
	if c.version, err = c.serverVersion(ctx); err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("kubernetes server version: %w", err)
	}
	return c, nil
}

// Endpoints: candidates talk to the API server only.
func (c *kubeCluster) Endpoints() []string { return []string{kubeAPIServerNode + ":" + kubeAPIPort} }

func (c *kubeCluster) HostEndpoints(ctx context.Context) ([]string, error) {
	ep, err := c.apiNode().Endpoint(ctx, kubeAPIPort)
	if err != nil {
		return nil, err
	}
	return []string{ep}, nil
}

func (c *kubeCluster) apiNode() *platform.Node { return c.nodes[1] }

// Ready: a Lease round trip through the API server (which needs etcd) and a running
// controller manager.
func (c *kubeCluster) Ready(ctx context.Context) error {
	if err := c.leaseRoundTrip(ctx); err != nil {
		return err
	}
	if len(c.nodes) > 2 {
		return c.nodeRoundTrip(ctx, kubeControllerNode, "")
	}
	return nil
}

func (c *kubeCluster) WaitReady(ctx context.Context) error { return retry(ctx, c.Ready) }

// RestartNode is base.RestartNode with this cluster's readiness (base's would ask every
// node on the API server's port).
func (c *kubeCluster) RestartNode(ctx context.Context, n *platform.Node) error {
	return c.restartWith(ctx, n, c.WaitReady)
}

// nodeRoundTrip per node: etcd a put and get, the API server the Lease round trip, the
// controller manager (no client port) that its process runs and is not frozen.
func (c *kubeCluster) nodeRoundTrip(ctx context.Context, name, hostEP string) error {
	switch name {
	case kubeEtcdNode:
		ec := &etcdCluster{}
		return ec.memberRoundTrip(ctx, name, hostEP)
	case kubeAPIServerNode:
		return c.leaseRoundTrip(ctx)
	}
	st, err := c.nodes[len(c.nodes)-1].State(ctx)
	switch {
	case err != nil:
		return err
	case !st.Running:
		return fmt.Errorf("%s is %s", name, st.Status)
	case st.Paused:
		return fmt.Errorf("%s is frozen", name)
	}
	return nil
}

// NodeRoundTrip: etcd's port differs from the API server's.
func (c *kubeCluster) NodeRoundTrip(ctx context.Context, n *platform.Node) error {
	if !c.owns(n) {
		return fmt.Errorf("node %s is not part of this kubernetes cluster", n.Name())
	}
	switch n.Name() {
	case kubeEtcdNode:
		ep, err := n.Endpoint(ctx, etcdClientPort)
		if err != nil {
			return err
		}
		return c.nodeRoundTrip(ctx, n.Name(), ep)
	case kubeAPIServerNode:
		return c.leaseRoundTrip(ctx)
	}
	return c.nodeRoundTrip(ctx, n.Name(), "")
}

// AdminClient is a cluster-admin client for the harness and tests, through the API
// server's host port.
func (c *kubeCluster) AdminClient(ctx context.Context) (*kubernetes.Clientset, error) {
	ep, err := c.apiNode().Endpoint(ctx, kubeAPIPort)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(c.restConfig(ep, c.adminCert, c.adminKey))
}

func (c *kubeCluster) restConfig(hostPort string, cert, key []byte) *rest.Config {
	return &rest.Config{
		Host: "https://" + hostPort,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: kubeAPIServerNode, CAData: c.pki.caPEM, CertData: cert, KeyData: key,
		},
		Timeout: 5 * time.Second,
		QPS:     -1, // no client-side rate limit
	}
}

// leaseRoundTrip creates, reads back and deletes a Lease.
func (c *kubeCluster) leaseRoundTrip(ctx context.Context) error {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return err
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	name := "splitbrain-ready-" + hex.EncodeToString(rnd[:])
	holder := "splitbrain-harness"
	leases := cs.CoordinationV1().Leases(KubeNamespace)
	if _, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubernetes: create lease: %w", err)
	}
	got, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes: get lease: %w", err)
	}
	if got.Spec.HolderIdentity == nil || *got.Spec.HolderIdentity != holder {
		return fmt.Errorf("kubernetes: lease %s read back without the holder written", name)
	}
	if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("kubernetes: delete lease: %w", err)
	}
	return nil
}

// ensureRBAC grants the candidates' group what the recipes use, in every namespace.
func (c *kubeCluster) ensureRBAC(ctx context.Context) error {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kubeCandidateRole}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubernetes: create ClusterRole %s: %w", kubeCandidateRole, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kubeCandidateRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeCandidateRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: storekinds.KubeCandidateGroup}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubernetes: create ClusterRoleBinding %s: %w", kubeCandidateRole, err)
	}
	// Pod admission needs the namespace's default ServiceAccount; made here, the candidates'
	// first Pods (PodHost) need not wait for the service-account controller (about 1 s).
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: KubeNamespace}}
	if _, err := cs.CoreV1().ServiceAccounts(KubeNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubernetes: create ServiceAccount default: %w", err)
	}
	return nil
}

func (c *kubeCluster) serverVersion(ctx context.Context) (string, error) {
	cs, err := c.AdminClient(ctx)
	if err != nil {
		return "", err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

// Credentials issues candidate node a client certificate (user = the node id, group
// storekinds.KubeCandidateGroup) and a kubeconfig for the first of endpoints.
func (c *kubeCluster) Credentials(node string, endpoints []string) (CandidateCredentials, error) {
	if len(endpoints) == 0 {
		return CandidateCredentials{}, errors.New("kubernetes credentials: no API server endpoint")
	}
	cert, key, err := c.pki.issue(node, []string{storekinds.KubeCandidateGroup}, nil, nil)
	if err != nil {
		return CandidateCredentials{}, err
	}
	return CandidateCredentials{User: node,
		Kubeconfig: kubeconfigYAML(endpoints[0], kubeAPIServerNode, c.pki.caPEM, cert, key, node)}, nil
}
