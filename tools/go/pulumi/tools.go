//go:build tools

// Package tools pins the Pulumi CLI (github.com/pulumi/pulumi/pkg/v3/cmd/pulumi). pkg/v3's own
// go.mod replaces sdk/v3 with ../sdk, which `go install ...@version` refuses; requiring both at
// one version here builds what that replace builds.
package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
