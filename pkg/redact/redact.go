// Package redact hides secrets in values that are printed: logs, errors
// that reach API clients and HPA conditions, flag errors.
package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// URL hides the user information of a URL ("https://user:pass@host/p"
// becomes "https://xxxxx@host/p"), the user name too: tokens are often
// passed as one. A string that does not parse as a URL with a user (a
// malformed URL in an error message: "//user:pass@host", "http:/u:p@h")
// has whatever precedes each "@", back to the "/" before it, masked all
// the same: masking too much of a path is better than printing a password.
func URL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = url.User(Mask)
		return u.String()
	}
	var b strings.Builder
	prev := 0
	for {
		at := strings.IndexByte(raw[prev:], '@')
		if at < 0 {
			b.WriteString(raw[prev:])
			return b.String()
		}
		at += prev
		start := prev + strings.LastIndexByte(raw[prev:at], '/') + 1
		b.WriteString(raw[prev:start])
		if at > start {
			b.WriteString(Mask)
		}
		b.WriteByte('@')
		prev = at + 1
	}
}

// Error hides the user information of the URL in every *url.Error err
// wraps, as net/http leaves the user name and hides only the password. It
// changes err in place and returns it. Call it where the error is made:
// fmt.Errorf copies the message of what it wraps.
func Error(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if ue, ok := e.(*url.Error); ok {
			ue.URL = URL(ue.URL)
		}
	}
	return err
}
