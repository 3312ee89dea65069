//go:build tools

// Package tools pins etcd (the main package at the root of go.etcd.io/etcd/server/v3).
package tools

import _ "go.etcd.io/etcd/server/v3"
