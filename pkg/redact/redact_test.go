package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:s3cret@prom.svc:9090/sub?x=1":  "http://xxxxx@prom.svc:9090/sub?x=1",
		"https://token@prom.example":                "https://xxxxx@prom.example",
		"http://prom.svc:9090":                      "http://prom.svc:9090",
		"http://user:p%40ss@prom:1":                 "http://xxxxx@prom:1",
		"prom.svc:9090":                             "prom.svc:9090",
		"http://user:s3cret@bad host:99999/x":       "http://xxxxx@bad host:99999/x",
		"ftp://u:p@h":                               "ftp://xxxxx@h",
		"http://u:p@[::1":                           "http://xxxxx@[::1",
		"http://u:p@host@other/path@x":              "http://xxxxx@other/path@x",
		"not a url with user:pass@host in the text": "xxxxx@host in the text",
		"//user:pass@host/p":                        "//xxxxx@host/p",
		"http:/user:pass@host":                      "http:/xxxxx@host",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestError(t *testing.T) {
	err := fmt.Errorf("listing: %w", Error(&url.Error{Op: "Post", URL: "http://admin@prom:9090/api/v1/query", Err: errors.New("connection refused")}))
	if got := err.Error(); strings.Contains(got, "admin") || !strings.Contains(got, "http://xxxxx@prom:9090/api/v1/query") {
		t.Errorf("Error() = %q, want the user hidden", got)
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

// FuzzURL checks that no user information survives redaction, whatever
// the input: what the result would give as user information is masks only.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"http://user:pass@host:1/p", "https://t@h", "http://h", "x://a:b@c@d/e", "http://[::1]:80", "://@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := URL(raw)
		// What is left as user information may only be masks (and the "@"
		// between masked segments, "//xxxxx@@h").
		if u, err := url.Parse(got); err == nil && u.User != nil {
			rest := strings.NewReplacer(Mask, "", "%40", "", "@", "").Replace(u.User.String())
			if rest != "" {
				t.Fatalf("URL(%q) = %q keeps user information %q", raw, got, u.User.String())
			}
		}
	})
}
