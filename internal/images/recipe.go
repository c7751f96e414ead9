package images

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/internal/storekinds"
)

//go:embed dockerfiles
var dockerfiles embed.FS

// contextFile is one file of a build context besides the Dockerfile.
type contextFile struct {
	name string
	mode int64
	data []byte // nil with dir=true
	dir  bool
}

// recipe is everything that determines one role image: its tag is a hash of all of it.
type recipe struct {
	role       Role
	dockerfile string // with the parent substituted
	parentID   string // image ID of the parent ("" for FROM scratch)
	files      []contextFile
}

// hashLen is how many hex digits of the content hash go into a tag: 48 bits is plenty
// for the handful of images one machine keeps.
const hashLen = 12

// contentHash digests a recipe; any changed byte, file name, mode or parent gives a new hash.
func (r recipe) contentHash() string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	field("splitbrain-image-v1")
	field(string(r.role))
	field(r.parentID)
	field(r.dockerfile)
	if salt := os.Getenv(EnvSalt); salt != "" { // unset keeps the tags of unsalted builds
		field("salt:" + salt)
	}
	files := append([]contextFile(nil), r.files...)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	for _, f := range files {
		field(f.name)
		fmt.Fprintf(h, "%o %t %d\n", f.mode, f.dir, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:hashLen]
}

// ref is the local tag of a recipe.
func (r recipe) ref() string { return localRef(r.role, r.contentHash()) }

func localRef(role Role, hash string) string { return Namespace + string(role) + ":" + hash }

// embedded reads a file of the dockerfiles directory.
func embedded(name string) []byte {
	b, err := dockerfiles.ReadFile("dockerfiles/" + name)
	if err != nil {
		panic(err) // the embed pattern guarantees the file exists
	}
	return b
}

// dockerfileFor returns a role's Dockerfile with its parent image filled in.
func dockerfileFor(role Role, parent string) string {
	return strings.ReplaceAll(string(embedded(string(role)+".Dockerfile")), "{{PARENT}}", parent)
}

// scriptFiles lists the embedded scripts a role's build context needs.
func scriptFiles(role Role) []contextFile {
	switch role {
	case storekinds.Postgres:
		return []contextFile{{name: "postgres-entrypoint.sh", mode: 0o755, data: embedded("postgres-entrypoint.sh")}}
	case storekinds.ZooKeeper:
		return []contextFile{{name: "zk-entrypoint.sh", mode: 0o755, data: embedded("zk-entrypoint.sh")}}
	}
	return nil
}

// readAllLimited is io.ReadAll with a bound, for reading binaries into a build context.
func readAllLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("file larger than %d bytes", max)
	}
	return b, nil
}
