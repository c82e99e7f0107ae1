// Package prom is the metrics adapter's Prometheus client: the
// client_golang HTTP API client over a pooled transport, a deadline on
// every call, optional CA and bearer token files, latency and error
// metrics, and errors sorted into kinds the API layer can report clearly.
// Instant queries, asked on every metrics request, are read by the
// package's own one-pass decoder into compact samples.
package prom

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuscale/gpuscale/pkg/inputlimit"
	"github.com/gpuscale/gpuscale/pkg/redact"
)

// Options configure a Client.
type Options struct {
	// URL is the Prometheus base address, for example http://127.0.0.1:9090.
	URL string
	// Timeout bounds each call, including Prometheus's own evaluation
	// (sent as the timeout parameter). Default 5s.
	Timeout time.Duration
	// CAFile, if set, is a PEM bundle that verifies Prometheus's certificate.
	CAFile string
	// TokenFile, if set, holds a bearer token sent with every call; it is
	// read on each call so that rotated tokens are picked up.
	TokenFile string
	// Compression asks Prometheus for gzip-compressed replies. Off by
	// default: a reply for a thousand objects is about 100 KiB, which a
	// cluster network carries in well under a millisecond, while
	// compressing it costs Prometheus a few milliseconds of CPU per
	// request. Turn it on for a Prometheus behind a slow link.
	Compression bool
	// MaxIdleConns is the connection pool size kept open to Prometheus.
	// Default 64.
	MaxIdleConns int
	// Metrics records call latency and errors; nil records nothing.
	Metrics *Metrics
	// Transport, when set, carries every call in place of the pooled
	// transport (CAFile is then not used): for example the API server's
	// service proxy, to reach an in-cluster Prometheus from outside.
	Transport http.RoundTripper
}

// Client calls the Prometheus HTTP API.
type Client struct {
	api     v1.API
	http    *http.Client
	query   *url.URL // the /api/v1/query endpoint
	url     string
	timeout time.Duration
	metrics *Metrics
}

// New builds a Client. It makes no calls.
func New(o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("prometheus url: must be set")
	}
	if !strings.HasPrefix(o.URL, "http://") && !strings.HasPrefix(o.URL, "https://") {
		return nil, fmt.Errorf("prometheus url: %q must start with http:// or https://", redact.URL(o.URL))
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 64
	}
	rt := o.Transport
	if rt == nil {
		transport, err := newTransport(o)
		if err != nil {
			return nil, err
		}
		rt = transport
	}
	if o.TokenFile != "" {
		rt = &bearerFromFile{path: o.TokenFile, next: rt}
	}
	hc := &http.Client{Transport: rt}
	c, err := api.NewClient(api.Config{Address: o.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus url %q: %w", redact.URL(o.URL), redact.Error(err))
	}
	// Credentials in the URL are sent (as basic auth) but never printed.
	return &Client{api: v1.NewAPI(c), http: hc, query: c.URL("/api/v1/query", nil), url: redact.URL(o.URL), timeout: o.Timeout,
		metrics: o.Metrics}, nil
}

func newTransport(o Options) (*http.Transport, error) {
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        o.MaxIdleConns,
		MaxIdleConnsPerHost: o.MaxIdleConns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: o.Timeout,
		DisableCompression:  !o.Compression,
	}
	if o.CAFile != "" {
		pem, err := inputlimit.ReadFile(o.CAFile, inputlimit.SecretFileBytes)
		if err != nil {
			return nil, fmt.Errorf("prometheus ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("prometheus ca file %s: no PEM certificates found", o.CAFile)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return t, nil
}

// URL is the Prometheus address the client calls, with any user and
// password in it hidden.
func (c *Client) URL() string { return c.url }

// Series lists the series matching match between start and end.
func (c *Client) Series(ctx context.Context, match string, start, end time.Time) ([]model.LabelSet, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	began := time.Now()
	sets, _, _, err := c.api.Series(ctx, []string{match}, start, end)
	err = classify(ctx, err, c.url)
	c.metrics.observe("series", began, err)
	return sets, err
}

// Query evaluates an instant query at ts. A scalar result becomes one
// sample with no labels; a matrix or string result is an error.
func (c *Client) Query(ctx context.Context, q string, ts time.Time) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	began := time.Now()
	samples, err := c.instantQuery(ctx, q, ts)
	err = classify(ctx, err, c.url)
	c.metrics.observe("query", began, err)
	return samples, err
}

// bearerFromFile adds the token in path to every request.
type bearerFromFile struct {
	path string
	next http.RoundTripper
}

func (b *bearerFromFile) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := inputlimit.ReadFile(b.path, inputlimit.SecretFileBytes)
	if err != nil {
		return nil, fmt.Errorf("prometheus token file: %w", err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return b.next.RoundTrip(req)
}
