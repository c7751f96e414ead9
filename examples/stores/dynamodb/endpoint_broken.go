//go:build broken

package main

// endpointURL of the broken twin passes the endpoint as it comes, without a scheme.
func endpointURL(endpoint string) string { return endpoint }
