package platform

import (
	"os"
	"strings"
	"testing"
)

func TestNetnsInodeRefusesTheHostsNamespace(t *testing.T) {
	if _, err := netnsInode(os.Getpid()); err == nil || !strings.Contains(err.Error(), "host's network namespace") {
		t.Fatalf("netnsInode(own pid) = %v, want a refusal", err)
	}
}

func TestNetnsEnvValues(t *testing.T) {
	for v, want := range map[string]string{"sidecar": "SPLITBRAIN_NETNS=sidecar", "hots": `SPLITBRAIN_NETNS="hots" is not one of auto, sidecar`} {
		t.Setenv(NetnsEnv, v)
		if ok, why := hostNetnsUsable(); ok || why != want {
			t.Errorf("%s=%s: usable %v (%s), want not usable (%s)", NetnsEnv, v, ok, why, want)
		}
	}
}
