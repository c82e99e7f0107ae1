package prom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func serve(t *testing.T, code int, body string, check func(*http.Request)) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			check(r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestQueryScalarBecomesOneSample(t *testing.T) {
	s := serve(t, 200, `{"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"42"]}}`, nil)
	c, err := New(Options{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	vec, err := c.Query(context.Background(), "42", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(vec) != 1 || vec[0].Value != 42 || vec[0].Timestamp.Unix() != 1700000000 || len(vec[0].Labels) != 0 {
		t.Errorf("vector = %v, want one unlabelled sample 42", vec)
	}
}

func TestQueryMatrixIsBadQuery(t *testing.T) {
	s := serve(t, 200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, nil)
	c, _ := New(Options{URL: s.URL})
	_, err := c.Query(context.Background(), "up[5m]", time.Now())
	if KindOf(err) != KindBadQuery || !strings.Contains(err.Error(), "matrix") {
		t.Errorf("err = %v (kind %q), want bad_query naming the matrix", err, KindOf(err))
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		code int
		body string
		want Kind
	}{
		{400, `{"status":"error","errorType":"bad_data","error":"parse error"}`, KindBadQuery},
		{422, `{"status":"error","errorType":"execution","error":"many-to-many"}`, KindBadQuery},
		{503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, KindTimeout},
		{503, `{"status":"error","errorType":"unavailable","error":"starting"}`, KindUnavailable},
		{502, `bad gateway`, KindUnavailable},
	}
	for _, tc := range tests {
		s := serve(t, tc.code, tc.body, nil)
		metrics := NewMetrics(prometheus.NewRegistry())
		c, _ := New(Options{URL: s.URL, Metrics: metrics})
		_, err := c.Query(context.Background(), "up", time.Now())
		if KindOf(err) != tc.want {
			t.Errorf("%d %s: kind %q (%v), want %q", tc.code, tc.body, KindOf(err), err, tc.want)
		}
		if got := testutil.ToFloat64(metrics.errors.WithLabelValues("query", string(tc.want))); got != 1 {
			t.Errorf("%d %s: errors_total = %v, want 1", tc.code, tc.body, got)
		}
	}
}

func TestDeadlineIsTimeout(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); s.Close() })
	c, _ := New(Options{URL: s.URL, Timeout: 20 * time.Millisecond})
	if _, err := c.Series(context.Background(), "up", time.Now().Add(-time.Minute), time.Now()); KindOf(err) != KindTimeout {
		t.Errorf("err = %v, want a timeout", err)
	}
}

func TestTokenFileIsSentAndReread(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var seen []string
	s := serve(t, 200, `{"status":"success","data":[]}`, func(r *http.Request) { seen = append(seen, r.Header.Get("Authorization")) })
	c, err := New(Options{URL: s.URL, TokenFile: token})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Series(context.Background(), "up", time.Now(), time.Now())
	if err := os.WriteFile(token, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Series(context.Background(), "up", time.Now(), time.Now())
	if len(seen) != 2 || seen[0] != "Bearer first" || seen[1] != "Bearer second" {
		t.Errorf("Authorization headers = %q, want the file's token, re-read", seen)
	}
}

func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "prometheus url"},
		{Options{URL: "127.0.0.1:9090"}, "127.0.0.1:9090"},
		{Options{URL: "http://p", CAFile: filepath.Join(dir, "missing.pem")}, "missing.pem"},
		{Options{URL: "http://p", CAFile: notPEM}, "no PEM certificates"},
	} {
		if _, err := New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) error = %v, want one mentioning %q", tc.o, err, tc.want)
		}
	}
}

func TestCompressionIsAskedForOnlyWhenSet(t *testing.T) {
	for _, compression := range []bool{false, true} {
		var got []string
		s := serve(t, 200, `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			func(r *http.Request) { got = append(got, r.Header.Get("Accept-Encoding")) })
		c, err := New(Options{URL: s.URL, Compression: compression})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Query(context.Background(), "up", time.Now()); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: "", true: "gzip"}[compression]; len(got) != 1 || got[0] != want {
			t.Errorf("Compression %v: Accept-Encoding %q, want %q", compression, got, want)
		}
	}
}

func TestQuerySendsFormAndFallsBackToGet(t *testing.T) {
	at := time.Date(2026, 5, 7, 21, 7, 31, 500_000_000, time.UTC)
	for _, refusePost := range []bool{false, true} {
		var methods []string
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			methods = append(methods, r.Method)
			if refusePost && r.Method == http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			if err := r.ParseForm(); err != nil || r.URL.Path != "/prom/api/v1/query" || r.Form.Get("query") != `up{a="b"}` ||
				r.Form.Get("time") != "1778188051.5" || r.Form.Get("timeout") != "3s" {
				t.Errorf("request %s %s, form %v, want the query, its time and timeout", r.Method, r.URL.Path, r.Form)
			}
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1778188051.5,"7"]}]}}`))
		}))
		t.Cleanup(s.Close)
		c, err := New(Options{URL: s.URL + "/prom", Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		vec, err := c.Query(context.Background(), `up{a="b"}`, at)
		if err != nil {
			t.Fatal(err)
		}
		if pod, _ := vec[0].Label("pod"); len(vec) != 1 || pod != "a" || vec[0].Value != 7 || !vec[0].Timestamp.Time().Equal(at) {
			t.Errorf("samples = %+v, want pod a = 7 at %v", vec, at)
		}
		if want := map[bool]string{false: "POST", true: "POST GET"}[refusePost]; strings.Join(methods, " ") != want {
			t.Errorf("refusePost %v: methods %v, want %s", refusePost, methods, want)
		}
	}
}

func TestQueryBrokenReplies(t *testing.T) {
	for _, tc := range []struct {
		body string
		want Kind
	}{
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{}`, KindUnavailable},
		{`<html>proxy</html>`, KindUnavailable},
		{`{"status":"error","errorType":"execution","error":"many-to-many"}`, KindBadQuery},
		{`{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`, KindBadQuery},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1"}]}]}}`, KindBadQuery},
	} {
		s := serve(t, 200, tc.body, nil)
		c, _ := New(Options{URL: s.URL})
		if _, err := c.Query(context.Background(), "up", time.Now()); KindOf(err) != tc.want {
			t.Errorf("%s: err = %v (kind %q), want %q", tc.body, err, KindOf(err), tc.want)
		}
	}
}
