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
// passed as one. A string that does not parse as a URL is scanned for a
// "scheme://userinfo@" prefix all the same, so a malformed URL in an error
// message does not leak either.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		if u.User == nil {
			return raw
		}
		u.User = url.User(Mask)
		return u.String()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	return scheme + "://" + Mask + rest[at:]
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
