//go:build broken

package main

// address of the broken twin is empty: consul/api then uses its default, 127.0.0.1:8500.
func address(string) string { return "" }
