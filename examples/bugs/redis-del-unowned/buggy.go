//go:build buggy

package main

// buggy selects the published mistake (see main.go).
const buggy = true
