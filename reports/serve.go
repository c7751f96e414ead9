package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"syscall"
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
	files := http.FileServerFS(refusingFS{root})
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

// refusingFS opens files through the root and turns its "path escapes from parent" into a
// permission error, which the file server answers with 403 instead of 500. It opens without
// blocking and serves only regular files and directories: a FIFO in the store would
// otherwise hang the request until some writer appeared.
type refusingFS struct{ root *os.Root }

func (r refusingFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		}
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, nil
}

// HostCheck answers 421 to a request whose Host header is not one of the names the server
// is reached by on this machine: the listen address, localhost or 127.0.0.1 (any port for
// the names, since a browser sends the port it used). A page that rebinds its own DNS name
// to 127.0.0.1 sends its own name, so it cannot read the store (DNS rebinding).
func HostCheck(h http.Handler, listenAddr string) http.Handler {
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if host, _, err := net.SplitHostPort(listenAddr); err == nil && host != "" && host != "0.0.0.0" && host != "::" {
		allowed[strings.ToLower(host)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if !allowed[host] {
			http.Error(w, "misdirected request: open this server as http://localhost:PORT/ or http://127.0.0.1:PORT/", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}
