//go:build tools

// Package tools pins KWOK (sigs.k8s.io/kwok/cmd/kwok) and the stage configs in its module.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
