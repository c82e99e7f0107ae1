package explain

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuscale/gpuscale/pkg/redact"
)

// ServiceProxyURL turns http(s)://NAME.NAMESPACE.svc[.DOMAIN][:PORT]/PATH
// into the API server's proxy path for that Service; false for other URLs.
//
// The URL comes from the adapter's ConfigMap or Deployment, which others
// may write, and the proxied request carries the caller's credentials. So
// every part that goes into the API path is checked first: the name and
// namespace must be DNS-1123 labels, the port a number from 1 to 65535 and
// the path free of "." and ".." segments and of escapes, or a URL could
// send the caller's requests to another API path. A Service URL that fails
// is an error naming the part and the (redacted) URL, not a direct call.
func ServiceProxyURL(apiServer, raw string) (string, bool, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", false, nil
	}
	parts := strings.Split(u.Hostname(), ".")
	if len(parts) < 3 || parts[2] != "svc" {
		return "", false, nil
	}
	bad := func(format string, a ...any) (string, bool, error) {
		return "", false, fmt.Errorf("the Prometheus URL %q: %s; it is not followed through the API server's service proxy",
			redact.URL(raw), fmt.Sprintf(format, a...))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("scheme %q: want http or https", u.Scheme)
	}
	name, namespace := parts[0], parts[1]
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return bad("service name %q: %s", name, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return bad("namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return bad("port %q: want a number from 1 to 65535", port)
	}
	if u.RawPath != "" || strings.Contains(u.EscapedPath(), "%") {
		return bad("path %q: escaped characters are not allowed", u.EscapedPath())
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return bad("a query or fragment is not allowed")
	}
	path := strings.TrimSuffix(u.Path, "/")
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." || strings.Contains(seg, `\`) {
			return bad("path %q: segment %q is not allowed", u.Path, seg)
		}
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		return bad("path %q: want an absolute path", u.Path)
	}
	// The proxy names a Service port as SCHEME:NAME:PORT.
	return fmt.Sprintf("%s/api/v1/namespaces/%s/services/%s:%s:%s/proxy%s", strings.TrimSuffix(apiServer, "/"),
		namespace, u.Scheme, name, port, path), true, nil
}
