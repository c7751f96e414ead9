// Package faultproxy is the TCP fault proxy between the candidates and the store: Toxiproxy
// used as a library. Serve runs its HTTP API (in the store-proxy container, from the
// splitbrain binary of the candidate image); Client drives it from the harness with
// contexts and timeouts (the upstream client has neither).
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// APIPort is the port of the proxy's HTTP API inside its container.
const APIPort = "8474"

// Handler is Toxiproxy's HTTP API over a fresh proxy collection. The routes are Toxiproxy's
// own (its handlers read gorilla/mux variables); building them here instead of calling its
// Listen lets Serve use a given listener and stop on a context.
func Handler(logw io.Writer) http.Handler {
	// Some toxics (bandwidth) log through zerolog's global logger at trace level.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	logger := zerolog.New(logw).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	s := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	r := mux.NewRouter()
	r.HandleFunc("/reset", s.ResetState).Methods("POST")
	r.HandleFunc("/proxies", s.ProxyIndex).Methods("GET")
	r.HandleFunc("/proxies", s.ProxyCreate).Methods("POST")
	r.HandleFunc("/populate", s.Populate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}", s.ProxyUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}", s.ProxyDelete).Methods("DELETE")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicIndex).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics", s.ToxicCreate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicShow).Methods("GET")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicUpdate).Methods("POST")
	r.HandleFunc("/proxies/{proxy}/toxics/{toxic}", s.ToxicDelete).Methods("DELETE")
	r.HandleFunc("/version", s.Version).Methods("GET")
	return r
}

// Serve answers the API on ln until ctx ends.
func Serve(ctx context.Context, ln net.Listener, logw io.Writer) error {
	hs := &http.Server{Handler: Handler(logw), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Toxic is one Toxiproxy toxic: Type latency, bandwidth, timeout, slow_close, ...; Stream
// upstream (client to server) or downstream; Attributes as Toxiproxy names them (latency
// and jitter in ms, rate in KB/s, timeout and delay in ms).
type Toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float32        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

// Link is one proxied connection: Listen on the proxy, Upstream the real server.
type Link struct {
	Name     string  `json:"name"`
	Listen   string  `json:"listen"`
	Upstream string  `json:"upstream"`
	Enabled  bool    `json:"enabled"`
	Toxics   []Toxic `json:"toxics,omitempty"`
}

// Client talks to one proxy's API.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a client for the API at hostPort (e.g. "127.0.0.1:32771").
func NewClient(hostPort string) *Client {
	return &Client{base: "http://" + hostPort, http: &http.Client{Timeout: 10 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("fault proxy %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("fault proxy %s %s: %w", method, path, err)
		}
	}
	return nil
}

// Version checks the API answers.
func (c *Client) Version(ctx context.Context) error {
	return c.do(ctx, "GET", "/version", nil, http.StatusOK, nil)
}

// CreateLink adds a proxied connection and starts listening; the result's Listen is the
// address actually bound (port 0 picks one).
func (c *Client) CreateLink(ctx context.Context, name, listen, upstream string) (Link, error) {
	var out Link
	err := c.do(ctx, "POST", "/proxies", Link{Name: name, Listen: listen, Upstream: upstream, Enabled: true}, http.StatusCreated, &out)
	return out, err
}

// DeleteLink stops a link and closes its connections.
func (c *Client) DeleteLink(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/proxies/"+name, nil, http.StatusNoContent, nil)
}

// AddToxic adds t to link.
func (c *Client) AddToxic(ctx context.Context, link string, t Toxic) error {
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	return c.do(ctx, "POST", "/proxies/"+link+"/toxics", t, http.StatusOK, nil)
}

// StatusError is an answer of the proxy's API with an unexpected HTTP status.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("fault proxy %s %s: HTTP %d: %s", e.Method, e.Path, e.Code, e.Body)
}

// RemoveToxic deletes the toxic name from link. A toxic that is already gone counts as
// removed (a fault's own heal and the final sweep of an interrupted run may race for it); a
// link that does not exist is an error.
func (c *Client) RemoveToxic(ctx context.Context, link, name string) error {
	err := c.do(ctx, "DELETE", "/proxies/"+link+"/toxics/"+name, nil, http.StatusNoContent, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound && strings.Contains(se.Body, "toxic not found") {
		return nil
	}
	return err
}

// Toxics lists link's toxics.
func (c *Client) Toxics(ctx context.Context, link string) ([]Toxic, error) {
	var out []Toxic
	err := c.do(ctx, "GET", "/proxies/"+link+"/toxics", nil, http.StatusOK, &out)
	return out, err
}

// FirstLinkPort is the proxy port of the first link; link i listens on FirstLinkPort+i.
const FirstLinkPort = 20000

// Proxy is a proxy with one link per candidate and store endpoint.
type Proxy struct {
	*Client
	links     map[string][]string // link names by candidate
	endpoints map[string][]string // the endpoints a candidate is given, by candidate
}

// LinkName names the link of candidate to its i-th store endpoint.
func LinkName(candidate string, i int) string { return fmt.Sprintf("%s-store-%d", candidate, i) }

// Setup creates, on the proxy c, a link for each candidate and store endpoint, listening on
// listenIP from firstPort on (0: ports the proxy picks). host is the proxy's name as the
// candidates resolve it; Endpoints(candidate) is then what that candidate is given instead
// of the store's own endpoints.
func Setup(ctx context.Context, c *Client, host, listenIP string, firstPort int, candidates, endpoints []string) (*Proxy, error) {
	p := &Proxy{Client: c, links: map[string][]string{}, endpoints: map[string][]string{}}
	port := firstPort
	for _, cand := range candidates {
		for i, ep := range endpoints {
			name := LinkName(cand, i)
			l, err := c.CreateLink(ctx, name, net.JoinHostPort(listenIP, fmt.Sprint(port)), ep)
			if err != nil {
				p.Close(ctx)
				return nil, err
			}
			_, bound, err := net.SplitHostPort(l.Listen)
			if err != nil {
				p.Close(ctx)
				return nil, fmt.Errorf("fault proxy link %s listens on %q: %w", name, l.Listen, err)
			}
			p.links[cand] = append(p.links[cand], name)
			p.endpoints[cand] = append(p.endpoints[cand], net.JoinHostPort(host, bound))
			if port != 0 {
				port++
			}
		}
	}
	return p, nil
}

// Close deletes every link (their listeners and connections go with them).
func (p *Proxy) Close(ctx context.Context) error {
	var errs []error
	for _, links := range p.links {
		for _, l := range links {
			errs = append(errs, p.DeleteLink(ctx, l))
		}
	}
	return errors.Join(errs...)
}

// Links names candidate's links.
func (p *Proxy) Links(candidate string) []string { return p.links[candidate] }

// Endpoints are the store endpoints candidate is given: its links on the proxy.
func (p *Proxy) Endpoints(candidate string) []string { return p.endpoints[candidate] }

// ToxicNames lists the names of link's toxics.
func (p *Proxy) ToxicNames(ctx context.Context, link string) ([]string, error) {
	tx, err := p.Toxics(ctx, link)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(tx))
	for i, t := range tx {
		out[i] = t.Name
	}
	return out, nil
}
