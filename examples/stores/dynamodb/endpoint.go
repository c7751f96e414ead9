//go:build !broken

package main

// endpointURL: SPLITBRAIN_STORE_ENDPOINTS holds host:port; the SDK wants a URL.
func endpointURL(endpoint string) string { return "http://" + endpoint }
