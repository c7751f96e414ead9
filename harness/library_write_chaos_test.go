//go:build chaos

package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain-chaos/splitbrain/candidates/libraries"
	"github.com/splitbrain-chaos/splitbrain/internal/images"
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/internal/platform/platformtest"
)

// A library helper waits for a write's answer up to 2 s (docs/libraries.md, "How a library
// runs"): a resource that answers 700 ms late gets the write reported "accepted", not
// "unknown". With the Go runtime's clamp (200 ms at the 50 ms interval) each helper gave the
// write up while the resource went on to apply it, and a job that then unlocked let the
// write land after the next tenure's. Each helper runs in its library's image, as shipped.
func TestLibraryHelpersWaitForALateAnswer(t *testing.T) {
	r := platformtest.NewRun(t, 20*time.Minute)
	if ok, why := r.Net.HostHoldsGateway(); !ok {
		t.Fatalf("the resource cannot listen at the run network's gateway: %s", why)
	}
	const late = 700 * time.Millisecond
	ln, err := net.Listen("tcp", net.JoinHostPort(r.Net.Gateway().String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	applied := map[string]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			WriteID string `json:"write_id"`
		}
		b, _ := io.ReadAll(req.Body)
		json.Unmarshal(b, &body)
		mu.Lock()
		applied[body.WriteID] = true
		mu.Unlock()
		// sleep: applied, answered late: what a saturated host's resource does.
		time.Sleep(late)
		io.WriteString(w, `{"result":"accepted","max":1}`)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	// One write each through the helper the adapters use, by the runtime's own means.
	cases := []struct {
		folder string
		cmd    []string
	}{
		{"redis-py", []string{"python3", "-c", "import sys; sys.path.insert(0, '" + images.LibraryDir + "'); import splitbrain as sb; sb.write(1)"}},
		{"node-redlock", []string{"node", "-e", "require('" + images.LibraryDir + "/splitbrain.js').write(1).then(() => process.exit(0))"}},
		{"etcdctl", []string{"sh", "-c", ". " + images.LibraryDir + "/splitbrain.sh && sb_write 1"}},
	}
	for _, c := range cases {
		t.Run(c.folder, func(t *testing.T) {
			lc, err := newLibraryCandidate(libraryIn(t, c.folder))
			if err != nil {
				t.Fatal(err)
			}
			res, err := images.EnsureLibrary(r.Ctx, images.EnsureOptions{}, lc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			var outMu sync.Mutex
			var ev writeLine
			printed := make(chan struct{})
			n, err := r.Engine.Start(r.Ctx, r.ID, r.Net, platform.NodeSpec{
				Name: "write-" + c.folder, Role: "candidate", Image: res.Ref, Entrypoint: c.cmd,
				Env: map[string]string{
					"SPLITBRAIN_NODE_ID": "c1", "SPLITBRAIN_STORE": "redis", "SPLITBRAIN_STORE_ENDPOINTS": "store:6379",
					"SPLITBRAIN_RESOURCE_URL": "http://" + ln.Addr().String(), "SPLITBRAIN_WRITE_INTERVAL": "50ms",
				},
				OnStdout: func(line []byte) {
					outMu.Lock()
					defer outMu.Unlock()
					out.Write(line)
					out.WriteByte('\n')
					var e writeLine
					if json.Unmarshal(line, &e) == nil && e.Kind == "write" && ev.Kind == "" {
						ev = e
						close(printed)
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Terminate(r.Ctx)
			// The helper prints its write event when it has the answer or gave the write up.
			select {
			case <-printed:
			case <-time.After(2 * time.Minute):
				outMu.Lock()
				defer outMu.Unlock()
				t.Fatalf("no write event within 2 min; stdout:\n%s", out.String())
			}
			outMu.Lock()
			defer outMu.Unlock()
			mu.Lock()
			defer mu.Unlock()
			if !applied[ev.WriteID] {
				t.Fatalf("write %q never reached the resource", ev.WriteID)
			}
			if ev.Result != "accepted" {
				t.Fatalf("a write answered %v late was reported %q, want accepted: the helper gave it up while the resource applied it", late, ev.Result)
			}
		})
	}
}

// writeLine is the part of a write event the test reads.
type writeLine struct {
	Kind    string `json:"kind"`
	WriteID string `json:"write_id"`
	Result  string `json:"result"`
}

// libraryIn is the first library recipe whose adapter lives in folder.
func libraryIn(t *testing.T, folder string) libraries.Recipe {
	t.Helper()
	for _, lib := range libraries.Registry {
		if lib.Folder == folder {
			return lib
		}
	}
	t.Fatalf("no library recipe in folder %s", folder)
	return libraries.Recipe{}
}
