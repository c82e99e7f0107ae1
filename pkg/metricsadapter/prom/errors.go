package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/gpuscale/gpuscale/pkg/redact"
)

// Kind sorts a failed call by what the caller should tell its client.
type Kind string

const (
	// KindTimeout: Prometheus did not answer within the deadline, or
	// timed out evaluating the query.
	KindTimeout Kind = "timeout"
	// KindUnavailable: Prometheus could not be reached or failed.
	KindUnavailable Kind = "unavailable"
	// KindBadQuery: Prometheus refused the query or could not execute it;
	// the rule needs fixing.
	KindBadQuery Kind = "bad_query"
	// KindCanceled: the caller went away.
	KindCanceled Kind = "canceled"
)

// Error is a failed Prometheus call.
type Error struct {
	Kind Kind
	URL  string
	Err  error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindTimeout:
		return fmt.Sprintf("prometheus at %s timed out: %v", e.URL, e.Err)
	case KindUnavailable:
		return fmt.Sprintf("prometheus at %s unavailable: %v", e.URL, e.Err)
	case KindBadQuery:
		return fmt.Sprintf("prometheus refused the query: %v", e.Err)
	default:
		return fmt.Sprintf("prometheus call %s: %v", e.Kind, e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a Prometheus error, or "" for other errors.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// classify wraps err in an *Error of the right kind; nil and errors
// already sorted stay as they are. url is printed as it is: pass it
// redacted.
func classify(ctx context.Context, err error, url string) error {
	var sorted *Error
	if err == nil || errors.As(err, &sorted) {
		return err
	}
	// net/http names the URL in its errors, user name included.
	err = redact.Error(err)
	kind := KindUnavailable
	var apiErr *v1.Error
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), ctx.Err() == context.DeadlineExceeded:
		kind = KindTimeout
	case errors.Is(err, context.Canceled):
		kind = KindCanceled
	case errors.As(err, &apiErr):
		typ, msg := errorType(apiErr)
		if msg != "" {
			err = fmt.Errorf("%s: %s", typ, msg)
		}
		switch typ {
		case v1.ErrTimeout:
			kind = KindTimeout
		case v1.ErrCanceled:
			kind = KindCanceled
		case v1.ErrBadData, v1.ErrExec:
			kind = KindBadQuery
		}
	case errors.As(err, &netErr) && netErr.Timeout():
		kind = KindTimeout
	}
	return &Error{Kind: kind, URL: url, Err: err}
}

// errorType is the API error's type. For statuses other than 400 and 422
// the client reports only "server_error" or "client_error" and keeps the
// body; Prometheus answers a query timeout with 503 and errorType
// "timeout" in that body.
func errorType(e *v1.Error) (v1.ErrorType, string) {
	if e.Type != v1.ErrServer && e.Type != v1.ErrClient || e.Detail == "" {
		return e.Type, ""
	}
	var body struct {
		ErrorType v1.ErrorType `json:"errorType"`
		Error     string       `json:"error"`
	}
	if json.Unmarshal([]byte(e.Detail), &body) == nil && body.ErrorType != "" {
		return body.ErrorType, body.Error
	}
	return e.Type, ""
}
