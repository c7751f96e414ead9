package libraries

// Registry is the list of library recipes: adding a library is its folder plus its entries
// here (docs/architecture.md, "Adding a library"). candidates.Registry lists them with the
// Go recipes, so run --help, nemesis list, assess --list and the matrix see them.
var Registry = []Recipe{nodeRedlock, nodeRedlockExtend, nodeEtcd3Election, nodeEtcd3Lock, curatorLeaderLatch, curatorLeaderLatchSuspended, curatorLeaderSelector, toozZooKeeper, toozRedis, pythonEtcd3Lock, pythonEtcd3LockRefresh, kazooElection, kazooElectionListener, redisPyLock, redisPyLockExtend, etcdctlLock, etcdctlLockHold}

// kubernetesPythonLeaderElection (libraries/kubernetes-python: the Kubernetes Python client
// 22.6.0's leaderelection with a ConfigMapLock) is written but not yet measured against the
// kubernetes store, so it has no matrix rows yet and is not listed (docs/libraries.md).
var _ = kubernetesPythonLeaderElection
