// Package consulserver pins the Consul server that splitbrain's offline consul image runs.
// The module only requires github.com/hashicorp/consul (as a tool, see go.mod); the image
// build runs `go build github.com/hashicorp/consul` here, so Consul's dependencies never
// enter the harness module. v1.14.5 is under the MPL 2.0; later lines need submodules
// (troubleshoot, envoyextensions) the reachable module proxy does not serve.
package consulserver
