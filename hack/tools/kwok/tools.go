//go:build tools

// Package tools pins kwok and kwokctl. They live in their own module because
// kwok v0.8.0 is built against the k8s.io v0.36 staging modules, while the
// parent module pins k8s.io/kubernetes v1.37.2 with every staging module
// replaced to v0.37.2.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
