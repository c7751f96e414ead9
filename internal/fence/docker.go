package fence

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// The Docker-API face: the container calls of the Docker Engine API that fence-agents'
// fence_docker makes (agents/docker/fence_docker.py, 4.12.1), mapped onto the device's power
// actions, with the same history events, faults and access rules. A container is a node
// of the run by its candidate id (the plug); nothing else exists behind this face, and it
// is no Docker engine: no other endpoint, method or container is served.
//
//	GET  [/vX.Y]/containers/NODE/json   status: {"State":{"Running":...}}
//	POST [/vX.Y]/containers/NODE/kill   off (a SIGKILL, answered once confirmed dead): 204
//	POST [/vX.Y]/containers/NODE/start  on: 204
//	GET  [/vX.Y]/containers/json        the list (fence_docker's list and monitor actions):
//	                                    every node of the run with its power state
//
// restart (fence_docker's method=cycle) is refused: it is two actions, and the device
// records one per request; the default method onoff sends kill, then start.
var dockerPath = regexp.MustCompile(`^(?:/v[0-9]+\.[0-9]+)?/containers/(?:(json)|([^/]+)/([a-z]+))$`)

// dockerOp is the Docker call a request made ("" on the device's own face).
type dockerOp string

const (
	dockerInspect dockerOp = "inspect"
	dockerKill    dockerOp = "kill"
	dockerStart   dockerOp = "start"
	dockerList    dockerOp = "list"
)

// call is one request as the device understands it, from either face.
type call struct {
	action, target string // history.Fence*, or "invalid" (invalid says why)
	method         string // the method the action needs
	invalid        string
	docker         dockerOp
	path           string
	nodes          []nodePower // the list's answer
}

func (q call) list() bool { return q.docker == dockerList }

// what names the call in a method refusal.
func (q call) what() string {
	if q.docker != "" {
		return q.path
	}
	return "/" + q.action
}

// parseCall reads the action and its target from either face's path.
func parseCall(req *http.Request) call {
	p := req.URL.Path
	if strings.HasPrefix(p, "/containers/") || strings.HasPrefix(p, "/v") {
		return parseDocker(req)
	}
	action, target, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	q := call{action: action, target: clip(target), method: http.MethodPost}
	switch action {
	case history.FenceStatus:
		q.method = http.MethodGet
	case history.FenceOff, history.FenceOn:
	default:
		q.action = "invalid"
		q.invalid = fmt.Sprintf("unknown path %q: use POST /off/NODE, POST /on/NODE or GET /status/NODE", p)
	}
	return q
}

func parseDocker(req *http.Request) call {
	p := req.URL.Path
	q := call{path: clip(p), action: "invalid", invalid: fmt.Sprintf("unknown Docker API path %q: this fence device serves only "+
		"GET /containers/NODE/json, POST /containers/NODE/kill, POST /containers/NODE/start and GET /containers/json "+
		"for the run's candidates (fence_docker's calls)", clip(p))}
	m := dockerPath.FindStringSubmatch(p)
	switch {
	case m == nil:
		return q
	case m[1] == "json":
		q.action, q.docker, q.method = history.FenceStatus, dockerList, http.MethodGet
		return q
	}
	q.target = clip(m[2])
	switch m[3] {
	case "json":
		q.action, q.docker, q.method = history.FenceStatus, dockerInspect, http.MethodGet
	case "kill":
		// Only the default signal (SIGKILL) is a power-off; any other signal is no power action.
		if s := req.URL.Query().Get("signal"); s != "" && s != "KILL" && s != "SIGKILL" && s != "9" {
			q.invalid = fmt.Sprintf("kill with signal %q: this fence device only powers off (SIGKILL)", clip(s))
			return q
		}
		q.action, q.docker, q.method = history.FenceOff, dockerKill, http.MethodPost
	case "start":
		q.action, q.docker, q.method = history.FenceOn, dockerStart, http.MethodPost
	case "restart":
		q.invalid = "restart (fence_docker --method=cycle) is not offered: use the default method onoff (kill, then start)"
	}
	return q
}

func clip(s string) string {
	if len(s) > maxTarget {
		return s[:maxTarget]
	}
	return s
}

// nodePower is one node's power state in the list.
type nodePower struct {
	node string
	on   bool
}

// powerList reads every node's power state (the caller holds act).
func (d *Device) powerList(ctx context.Context) ([]nodePower, error) {
	out := make([]nodePower, 0, len(d.nodes))
	for _, n := range d.nodes {
		on, err := d.power.PoweredOn(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("power state of %s: %w", n, err)
		}
		out = append(out, nodePower{n, on})
	}
	return out, nil
}

func listNote(l []nodePower) string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l))
	for i, p := range l {
		parts[i] = p.node + " " + onOff(p.on)
	}
	return "list: " + strings.Join(parts, ", ")
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// answer writes a reply in the face's shape: the device's JSON Reply, or what the Docker
// Engine API answers ({"message"} on errors, 204 for kill and start).
func (d *Device) answer(w http.ResponseWriter, q call, code int, rep Reply) {
	if q.docker == "" && q.path == "" {
		d.writeJSON(w, code, rep)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d.limits.write))
	w.Header().Set("Content-Type", "application/json")
	if rep.Error != "" {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": rep.Error})
		return
	}
	switch q.docker {
	case dockerKill, dockerStart:
		w.WriteHeader(http.StatusNoContent)
	case dockerInspect:
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(inspectBody(q.target, rep.Power == "on"))
	case dockerList:
		list := make([]map[string]any, 0, len(q.nodes))
		for _, p := range q.nodes {
			status := "Up"
			if !p.on {
				status = "Exited (137)"
			}
			list = append(list, map[string]any{"Id": p.node, "Names": []string{"/" + p.node}, "State": stateName(p.on), "Status": status})
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(list)
	}
}

func inspectBody(node string, on bool) map[string]any {
	return map[string]any{"Id": node, "Name": "/" + node,
		"State": map[string]any{"Running": on, "Status": stateName(on)}}
}

func stateName(on bool) string {
	if on {
		return "running"
	}
	return "exited"
}
