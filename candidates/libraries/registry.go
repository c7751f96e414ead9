package libraries

// Registry is the list of library recipes: adding a library is its folder plus its entries
// here (docs/architecture.md, "Adding a library"). candidates.Registry lists them with the
// Go recipes, so run --help, nemesis list, assess --list and the matrix see them.
var Registry = []Recipe{nodeRedlock, nodeRedlockExtend, nodeEtcd3Election, nodeEtcd3Lock, curatorLeaderLatch, curatorLeaderLatchSuspended, curatorLeaderSelector, toozZooKeeper, toozRedis, pythonEtcd3Lock, pythonEtcd3LockRefresh, kazooElection, kazooElectionListener, redisPyLock, redisPyLockExtend, etcdctlLock, etcdctlLockHold, kubernetesPythonLeaderElection, pacemakerFencing, pacemakerNoStonith, pacemakerPriorityDelay}
