// Package jaegertest starts a real Jaeger v2 (all-in-one, memory storage)
// on loopback for end-to-end tests. The binary is built once from the
// separate tools/ module (which pins github.com/jaegertracing/jaeger) and
// cached in tools/bin; $TOKENTRACE_JAEGER names a prebuilt one. Every
// endpoint is bound to 127.0.0.1 on a free port, self-tracing is off.
package jaegertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLPGRPC and OTLPHTTP receive spans; QueryHTTP and QueryGRPC serve
	// the query APIs (HTTP: UI JSON and api_v3; gRPC: api_v2 and api_v3).
	OTLPGRPC, OTLPHTTP, QueryHTTP, QueryGRPC, Health string

	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
	once sync.Once
}

// repoRoot finds the module root from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// Binary returns the path of the Jaeger binary, building it if needed.
func Binary() (string, error) {
	if p := os.Getenv("TOKENTRACE_JAEGER"); p != "" {
		return p, nil
	}
	buildOnce.Do(func() {
		tools := filepath.Join(repoRoot(), "tools")
		out := filepath.Join(tools, "bin", "jaeger")
		// go build is incremental: fast when the binary is up to date.
		cmd := exec.Command("go", "build", "-o", out, "github.com/jaegertracing/jaeger/cmd/jaeger")
		cmd.Dir = tools
		b, err := cmd.CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("jaegertest: building Jaeger in %s: %v\n%s", tools, err, b)
			return
		}
		buildOnce.path = out
	})
	return buildOnce.path, buildOnce.err
}

// ConfigPath is the Jaeger configuration used (tools/jaeger.yaml).
func ConfigPath() string { return filepath.Join(repoRoot(), "tools", "jaeger.yaml") }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Start starts a Jaeger and waits until it is healthy.
func Start(ctx context.Context) (*Jaeger, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	j := &Jaeger{
		OTLPGRPC: addr(ports[0]), OTLPHTTP: addr(ports[1]), QueryHTTP: addr(ports[2]), QueryGRPC: addr(ports[3]), Health: addr(ports[4]),
		done: make(chan struct{}), log: &syncBuffer{},
	}
	cmd := exec.Command(bin, "--config", ConfigPath())
	cmd.Env = append(os.Environ(),
		"TT_JAEGER_OTLP_GRPC="+strconv.Itoa(ports[0]),
		"TT_JAEGER_OTLP_HTTP="+strconv.Itoa(ports[1]),
		"TT_JAEGER_QUERY_HTTP="+strconv.Itoa(ports[2]),
		"TT_JAEGER_QUERY_GRPC="+strconv.Itoa(ports[3]),
		"TT_JAEGER_HEALTH="+strconv.Itoa(ports[4]),
	)
	cmd.Stdout, cmd.Stderr = j.log, j.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	j.cmd = cmd
	go func() { _ = cmd.Wait(); close(j.done) }()
	if err := j.waitHealthy(ctx, 60*time.Second); err != nil {
		j.Stop()
		return nil, fmt.Errorf("%w\njaeger log:\n%s", err, j.log.String())
	}
	return j, nil
}

func (j *Jaeger) waitHealthy(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-j.done:
			return errors.New("jaegertest: Jaeger exited during start-up")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get("http://" + j.Health + "/status")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("jaegertest: Jaeger not healthy after %v", limit)
}

// Stop stops Jaeger and waits for it to exit.
func (j *Jaeger) Stop() {
	j.once.Do(func() {
		if j.cmd.Process != nil {
			_ = j.cmd.Process.Signal(os.Interrupt)
			select {
			case <-j.done:
			case <-time.After(10 * time.Second):
				_ = j.cmd.Process.Kill()
				<-j.done
			}
		}
	})
}

// Log returns what Jaeger printed.
func (j *Jaeger) Log() string { return j.log.String() }

type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) < 1<<20 {
		b.buf = append(b.buf, p...)
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
