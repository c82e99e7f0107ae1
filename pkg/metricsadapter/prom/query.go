package prom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// maxPooledBody is the largest reply buffer kept for reuse; a rare huge
// reply should not pin its memory.
const maxPooledBody = 8 << 20

// bodies holds reply buffers between queries: a thousand-sample reply is
// about 100 KiB, read on every request.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// instantQuery sends the query as client_golang's API client does (a form
// POST, a GET where the server refuses POST, the same time and timeout
// parameters and the same errors), but reads the reply with decodeQuery
// into compact samples instead of model.Vector: on an answer for a
// thousand objects that is most of the adapter's work.
func (c *Client) instantQuery(ctx context.Context, q string, ts time.Time) ([]Sample, error) {
	form := url.Values{}
	form.Set("query", q)
	form.Set("time", strconv.FormatFloat(float64(ts.Unix())+float64(ts.Nanosecond())/1e9, 'f', -1, 64))
	form.Set("timeout", c.timeout.String())
	args := form.Encode()

	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodies.Put(buf)
		}
	}()
	code, err := c.post(ctx, args, buf)
	if err == nil && (code == http.StatusForbidden || code == http.StatusMethodNotAllowed || code == http.StatusNotImplemented) {
		code, err = c.get(ctx, args, buf)
	}
	if err != nil {
		return nil, err
	}
	if code/100 != 2 {
		return nil, statusError(code, buf.Bytes())
	}
	samples, err := decodeQuery(buf.Bytes())
	var failure *apiFailure
	switch {
	case err == nil:
		return samples, nil
	case errors.Is(err, errNotVector), errors.Is(err, errNotFloat):
		return nil, &Error{Kind: KindBadQuery, URL: c.url, Err: err}
	case errors.As(err, &failure):
		return nil, &v1.Error{Type: v1.ErrorType(failure.errorType), Msg: failure.msg}
	default:
		return nil, &v1.Error{Type: v1.ErrBadResponse, Msg: err.Error()}
	}
}

func (c *Client) post(ctx context.Context, args string, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.query.String(), strings.NewReader(args))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// A POST with a body is retried on a broken keep-alive connection only
	// when marked idempotent, which a query is.
	req.Header["Idempotency-Key"] = nil
	return c.do(req, buf)
}

func (c *Client) get(ctx context.Context, args string, buf *bytes.Buffer) (int, error) {
	u := *c.query
	u.RawQuery = args
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	return c.do(req, buf)
}

// do sends req and reads the whole reply into buf.
func (c *Client) do(req *http.Request, buf *bytes.Buffer) (int, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// statusError is the error client_golang's API client gives for a reply
// with a status other than 2xx, so that classify sorts both alike.
func statusError(code int, body []byte) error {
	var typ v1.ErrorType
	var msg string
	switch code / 100 {
	case 4:
		typ, msg = v1.ErrClient, fmt.Sprintf("client error: %d", code)
	case 5:
		typ, msg = v1.ErrServer, fmt.Sprintf("server error: %d", code)
	default:
		typ, msg = v1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
	}
	if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		return &v1.Error{Type: typ, Msg: msg, Detail: string(body)}
	}
	var reply struct {
		Status    string       `json:"status"`
		ErrorType v1.ErrorType `json:"errorType"`
		Error     string       `json:"error"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return &v1.Error{Type: typ, Msg: msg, Detail: string(body)}
	}
	if reply.Status == "success" {
		return &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	if reply.ErrorType == "" {
		reply.ErrorType = v1.ErrClient
	}
	if reply.Error == "" {
		reply.Error = fmt.Sprintf("client error: %d", code)
	}
	return &v1.Error{Type: reply.ErrorType, Msg: reply.Error}
}
