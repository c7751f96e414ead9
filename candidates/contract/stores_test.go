package contract

import (
	"slices"
	"testing"
)

// TestStoresAreTheStoreKinds: SPLITBRAIN_STORE takes exactly the declared store kinds and none.
func TestStoresAreTheStoreKinds(t *testing.T) {
	want := []string{StoreEtcd, StoreZooKeeper, StorePostgres, StoreRedis, StoreRedisMulti, StoreDynamoDB, StoreConsul, StoreKubernetes, StoreNone}
	if !slices.Equal(Stores, want) {
		t.Fatalf("Stores = %v, want %v", Stores, want)
	}
}
