// Command kubernetes is an example candidate for --store kubernetes, written from
// docs/candidates.md section 8 ("kubernetes"): client-go's leaderelection on a Lease,
// configured from the kubeconfig the harness gives, with timings scaled to the TTL. The
// token is leaseTransitions + 1 of the write that made this candidate the holder.
//
//	CGO_ENABLED=0 go build -o /tmp/k8s-candidate ./examples/stores/kubernetes
//	splitbrain run --store kubernetes --candidate-cmd /tmp/k8s-candidate --nemesis pause-leader --time 30s
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain-chaos/splitbrain/examples/internal/candidate"
)

// recordingLock notes the writes of the Lease that name this candidate: the first one's
// leaseTransitions gives the token (a later read could already show another holder's), and
// every one's send time moves the local deadline.
type recordingLock struct {
	resourcelock.Interface
	mu       sync.Mutex
	token    int64
	callT    int64
	lastSent time.Time
}

func (l *recordingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Create)
}

func (l *recordingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Update)
}

func (l *recordingLock) write(ctx context.Context, r resourcelock.LeaderElectionRecord,
	f func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	sent, callT := time.Now(), candidate.Monotonic()
	err := f(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.mu.Lock()
		if l.token == 0 {
			l.token, l.callT = int64(r.LeaderTransitions)+1, callT
		}
		l.lastSent = sent
		l.mu.Unlock()
	}
	return err
}

func (l *recordingLock) state() (token, callT int64, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token, l.callT, l.lastSent
}

func main() {
	env := candidate.Load("kubernetes")
	ctx, stop := candidate.Signals()
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeconfig:", err)
		os.Exit(64)
	}
	rc.Timeout = env.TTL        // no bound by default (R16)
	rc.QPS, rc.Burst = 100, 200 // the default 5/s throttle delays renewals
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(64)
	}
	// client-go's 15 s / 10 s / 2 s scaled to the TTL; a Lease stores whole seconds.
	lease := ((env.TTL + time.Second - 1) / time.Second) * time.Second
	renewDeadline, retry := lease*2/3, lease*2/15
	name := strings.Trim(strings.NewReplacer("_", "-", ".", "-").Replace(strings.ToLower(env.Election)), "-")
	w := candidate.NewWriter(env)
	for ctx.Err() == nil {
		candidate.Campaigning()
		lock := &recordingLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: "example-" + name, Namespace: "default"},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: env.Node + "_" + candidate.Unique()}, // fresh per campaign
		}}
		started := make(chan struct{})
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: lease, RenewDeadline: renewDeadline, RetryPeriod: retry,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(started) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "leader elector:", err)
			os.Exit(64)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); le.Run(runCtx) }()
		select {
		case <-started:
		case <-ctx.Done():
		}
		if ctx.Err() != nil { // SIGTERM while campaigning: a Lease won meanwhile is released unannounced (R10)
			cancel()
			<-done
			break
		}
		token, callT, sent := lock.state()
		dl := &candidate.Deadline{}
		dl.Extend(sent, lease)
		candidate.Elected(token, callT)
		reason := w.Lead(ctx, token, func() string {
			select {
			case <-done:
				return "client-go stopped leading: no renewal within the renew deadline"
			default:
			}
			_, _, sent := lock.state()
			dl.Extend(sent, lease) // client-go renews every retry period
			return dl.Lost()
		})
		candidate.SteppedDown(reason)
		cancel() // ReleaseOnCancel empties the Lease's holder
		<-done
	}
	os.Exit(0)
}
