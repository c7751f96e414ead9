//go:build !core

package stores

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// The kubeconfig a candidate gets parses with client-go, names the endpoint it was made for,
// verifies the server as kube-apiserver, and carries a certificate for the node in the
// candidates' group, signed by the cluster CA.
func TestCandidateKubeconfig(t *testing.T) {
	pki, err := newKubePKI()
	if err != nil {
		t.Fatal(err)
	}
	c := &kubeCluster{pki: pki}
	cred, err := c.Credentials("c2", []string{"store-proxy:20001"})
	if err != nil {
		t.Fatal(err)
	}
	if cred.User != "c2" {
		t.Errorf("user %q", cred.User)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(cred.Kubeconfig)
	if err != nil {
		t.Fatalf("%v\n%s", err, cred.Kubeconfig)
	}
	if rc.Host != "https://store-proxy:20001" || rc.TLSClientConfig.ServerName != kubeAPIServerNode {
		t.Errorf("host %q server name %q", rc.Host, rc.TLSClientConfig.ServerName)
	}
	pair, err := tls.X509KeyPair(rc.TLSClientConfig.CertData, rc.TLSClientConfig.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "c2" || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "splitbrain:candidates" {
		t.Errorf("subject %v", leaf.Subject)
	}
	block, _ := pem.Decode(rc.TLSClientConfig.CAData)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify against the CA: %v", err)
	}
	if _, err := c.Credentials("c1", nil); err == nil {
		t.Error("credentials without an endpoint: want an error")
	}
}
