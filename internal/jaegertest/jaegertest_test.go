package jaegertest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStartServesTheQueryAPIOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts Jaeger")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	for _, a := range []string{j.OTLPGRPC, j.OTLPHTTP, j.QueryHTTP, j.QueryGRPC} {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("endpoint %s not on loopback", a)
		}
	}
	resp, err := http.Get("http://" + j.QueryHTTP + "/api/services")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"data"`) {
		t.Fatalf("/api/services: %d %s", resp.StatusCode, b)
	}
	j.Stop()
	if _, err := http.Get("http://" + j.QueryHTTP + "/api/services"); err == nil {
		t.Error("Jaeger still answers after Stop")
	}
}
