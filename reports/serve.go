package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
)

// DefaultServeAddr binds to loopback: run reports can hold hostnames, logs and commands.
const DefaultServeAddr = "127.0.0.1:8080"

// servePolicy forbids the pages from loading or sending anything elsewhere; inline script and
// style stay allowed for the report's zoom and Porcupine's visualizations.
const servePolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// plainTypes are served as text whatever their content, so a log line holding HTML is
// never rendered as a page.
var plainTypes = map[string]string{
	".log": "text/plain; charset=utf-8", ".jsonl": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8",
	".json": "application/json", ".xml": "application/xml", ".html": "text/html; charset=utf-8",
	".png": "image/png", ".svg": "image/svg+xml",
}

// StoreHandler serves storeDir read-only. Every file is opened through an os.Root, which
// refuses paths that leave the directory, including through symlinks; requests that spell
// an escape (.., encoded or not, backslashes, NUL) are refused before that with 400.
func StoreHandler(storeDir string) (http.Handler, func() error, error) {
	root, err := os.OpenRoot(storeDir)
	if err != nil {
		return nil, nil, fmt.Errorf("serve: %w (give --store the directory holding the runs, default ./store)", err)
	}
	files := http.FileServerFS(refusingFS{root.FS()})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", servePolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if reason := unsafePath(r); reason != "" {
			http.Error(w, "refused: "+reason, http.StatusBadRequest)
			return
		}
		if ct, ok := plainTypes[strings.ToLower(path.Ext(r.URL.Path))]; ok {
			w.Header().Set("Content-Type", ct)
		} else if !strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		files.ServeHTTP(w, r)
	})
	return h, root.Close, nil
}

// unsafePath explains why a request path could reach outside the store, or returns "".
func unsafePath(r *http.Request) string {
	raw := r.URL.EscapedPath()
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return "path must start with /"
	}
	// Decode repeatedly: "%252e%252e" is ".." after two rounds; a proxy in front could
	// decode again, so any spelling of ".." is refused.
	cand := []string{p, raw}
	s := raw
	for i := 0; i < 3; i++ {
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			break
		}
		cand = append(cand, d)
		s = d
	}
	for _, c := range cand {
		if strings.ContainsAny(c, "\\\x00") {
			return "backslash or NUL in path"
		}
		for _, seg := range strings.Split(c, "/") {
			if seg == ".." {
				return "'..' in path"
			}
		}
		if strings.Contains(c, "//") {
			return "empty path segment"
		}
	}
	return ""
}

// refusingFS turns the root's "path escapes from parent" into a permission error, which the
// file server answers with 403 instead of 500.
type refusingFS struct{ fs.FS }

func (r refusingFS) Open(name string) (fs.File, error) {
	f, err := r.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}
