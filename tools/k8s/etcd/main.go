// Command etcd is etcd's own server (go.etcd.io/etcd/server/v3/etcdmain) built from the Go
// module proxy. etcd's server module carries replace directives, so `go install ...@version`
// refuses it; this wrapper module requires it at a pinned version instead
// (../shared/notes/kubernetes-testenv.md). Used only by scripts/k8s-testenv.sh for tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
