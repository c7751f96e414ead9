package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"
)

// WaitHTTP is a start wait strategy: GET path on port answers 200 at the container's address
// on its network, as Endpoint reaches it (testcontainers' wait.ForHTTP goes through the
// published port's docker-proxy).
func WaitHTTP(port, path string, timeout time.Duration) wait.Strategy {
	return httpWait{port: port, path: path, timeout: timeout}
}

var errExited = errors.New("the container exited")

type httpWait struct {
	port, path string
	timeout    time.Duration
}

func (w httpWait) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		url, err := w.url(ctx, target)
		if errors.Is(err, errExited) {
			return err
		}
		if err == nil {
			err = w.get(ctx, client, url)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("GET %s on port %s did not answer 200 within %v: %v", w.path, w.port, w.timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// url is the address to ask; a container that exited fails it at once.
func (w httpWait) url(ctx context.Context, target wait.StrategyTarget) (string, error) {
	in, err := target.Inspect(ctx)
	if err != nil {
		return "", err
	}
	if in.State != nil && !in.State.Running && in.State.Status == "exited" {
		return "", fmt.Errorf("wait for GET %s on port %s: %w (code %d)", w.path, w.port, errExited, in.State.ExitCode)
	}
	if in.NetworkSettings != nil {
		for _, ep := range in.NetworkSettings.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				return "http://" + net.JoinHostPort(ep.IPAddress.String(), w.port) + w.path, nil
			}
		}
	}
	return "", fmt.Errorf("the container has no address yet")
}

func (w httpWait) get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}
