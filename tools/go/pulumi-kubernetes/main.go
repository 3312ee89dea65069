// Command pulumi-resource-kubernetes is the pulumi-kubernetes provider, built from the published
// provider/v4 module at the commit of the v4.25.0 release tag.
//
// The module's own main package (provider/cmd/pulumi-resource-kubernetes/main.go) embeds
// schema-embed.json and terraform-mapping-embed.json, which `go generate` writes and git ignores,
// so it cannot be built from the module. This main does what that one does; scripts/build-tools.sh
// writes the two files next to it from the module's schema.json and terraform-mapping.json, the
// way the module's generate.go does (the schema's "version" set to the release).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
