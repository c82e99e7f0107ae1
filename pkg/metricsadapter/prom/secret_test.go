package prom

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A Prometheus URL may carry a user and password: they are sent (as basic
// auth) and never printed, in errors that reach API clients and HPA
// conditions, nor by URL(), which the start-up log prints.
func TestCredentialsInTheURLAreSentButNeverPrinted(t *testing.T) {
	var gotUser, gotPass string
	s := serve(t, http.StatusServiceUnavailable, `overloaded`, func(r *http.Request) { gotUser, gotPass, _ = r.BasicAuth() })
	withCreds := strings.Replace(s.URL, "http://", "http://gpuscale-reader:s3cret-pw@", 1)
	c, err := New(Options{URL: withCreds, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, queryErr := c.Query(context.Background(), "up", time.Now())
	if queryErr == nil {
		t.Fatal("a 503 was not an error")
	}
	if gotUser != "gpuscale-reader" || gotPass != "s3cret-pw" {
		t.Errorf("basic auth sent %q:%q, want the URL's user and password", gotUser, gotPass)
	}
	_, seriesErr := c.Series(context.Background(), "up", time.Now().Add(-time.Minute), time.Now())

	// A Prometheus that is not there: net/http names the URL in its error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://gpuscale-reader:s3cret-pw@" + ln.Addr().String()
	_ = ln.Close()
	down, err := New(Options{URL: closed, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, downQuery := down.Query(context.Background(), "up", time.Now())
	_, downSeries := down.Series(context.Background(), "up", time.Now().Add(-time.Minute), time.Now())
	_, badURL := New(Options{URL: "prom://gpuscale-reader:s3cret-pw@host"})

	for name, text := range map[string]string{
		"503 query":          err2s(queryErr),
		"503 series":         err2s(seriesErr),
		"unreachable query":  err2s(downQuery),
		"unreachable series": err2s(downSeries),
		"bad scheme":         err2s(badURL),
		"URL()":              c.URL(),
	} {
		if text == "" {
			t.Errorf("%s: nothing to check", name)
		}
		if strings.Contains(text, "s3cret-pw") || strings.Contains(text, "gpuscale-reader") {
			t.Errorf("%s prints the credentials: %s", name, text)
		}
	}
	if !strings.Contains(err2s(downQuery), "xxxxx@127.0.0.1") || !strings.Contains(c.URL(), "http://xxxxx@127.0.0.1") {
		t.Errorf("the address should still be named, its user information masked: %q, %q", err2s(downQuery), c.URL())
	}
}

func err2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
