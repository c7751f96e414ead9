//go:build !buggy

package main

// buggy is off: the fixed behaviour (see main.go).
const buggy = false
