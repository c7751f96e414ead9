// Command etcd is the etcd server (the full upstream CLI via etcdmain), built here as a
// small static binary for splitbrain's offline etcd image. It lives in its own module so
// etcd's server dependencies stay out of the harness module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
